// `npm run apikey`: the command itself is commands/apikey.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/apikey.ts'

export { command }

await runAsProgram(command, import.meta.url)
