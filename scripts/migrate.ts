// `npm run migrate`: the command itself is commands/migrate.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/migrate.ts'

export { command }

await runAsProgram(command, import.meta.url)
