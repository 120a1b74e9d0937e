// `npm run seed:activity`: the command itself is commands/seed-activity.ts, where a server beside it finds it too.
import { runAsProgram } from '../commands/cli.ts'
import { command } from '../commands/seed-activity.ts'

export { command }

await runAsProgram(command, import.meta.url)
