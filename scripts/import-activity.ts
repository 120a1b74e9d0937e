// `npm run import:activity`: the command itself is commands/import-activity.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/import-activity.ts'

export { command }

await runAsProgram(command, import.meta.url)
