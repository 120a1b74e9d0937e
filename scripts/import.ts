// `npm run import`: the command itself is commands/import.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/import.ts'

export { command }

await runAsProgram(command, import.meta.url)
