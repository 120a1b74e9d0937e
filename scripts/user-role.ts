// `npm run user:role`: the command itself is commands/user-role.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/user-role.ts'

export { command }

await runAsProgram(command, import.meta.url)
