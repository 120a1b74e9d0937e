import { parseArgs } from 'node:util'
import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { loadActivity } from '../lib/activity/load.ts'
import { syntheticActivity } from '../lib/activity/synthetic.ts'

const usage = 'usage: npm run seed:activity -- [--guilds N] [--users N] [--events N] [--seed S] [--replace]'

await runCli(async () => {
  let values
  try {
    values = parseArgs({
      options: {
        guilds: { type: 'string', default: '3' }, users: { type: 'string', default: '50' }, events: { type: 'string', default: '20000' },
        seed: { type: 'string', default: '1' }, replace: { type: 'boolean', default: false }
      }
    }).values
  } catch (err) {
    throw new CliError(`${err instanceof Error ? err.message : String(err)}\n${usage}`, 2)
  }
  const num = (name: string, v: string | undefined, min: number) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < min) throw new CliError(`--${name} must be an integer >= ${min}\n${usage}`, 2)
    return n
  }
  const options = { guilds: num('guilds', values.guilds, 1), users: num('users', values.users, 1), events: num('events', values.events, 0), seed: num('seed', values.seed, 0) }
  const handle = await openMigratedDatabase()
  try {
    const started = performance.now()
    const summary = await loadActivity(handle, syntheticActivity(options), {
      replace: values.replace,
      onProgress: (n) => process.stderr.write(`  ${n} events (${Math.round(n / ((performance.now() - started) / 1000))}/s)\n`)
    })
    console.log(`seeded ${summary.events} events (${summary.typing} typing, ${summary.messages} messages) over ${summary.guilds} guilds, ${summary.users} users, ${summary.days} days in ${summary.seconds.toFixed(2)} s (${Math.round(summary.events / summary.seconds)} events/s)`)
  } finally {
    await handle.close()
  }
})
