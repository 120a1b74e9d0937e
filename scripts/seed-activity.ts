import { parseArgs } from 'node:util'
import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { loadActivity } from '../lib/activity/load.ts'
import { SYNTHETIC_DAYS, SYNTHETIC_END, syntheticActivity } from '../lib/activity/synthetic.ts'

const usage = 'usage: npm run seed:activity -- [--guilds N] [--users N] [--events N] [--seed S] [--now] [--replace]'

await runCli(async () => {
  let values
  try {
    values = parseArgs({
      options: {
        guilds: { type: 'string', default: '3' },
        users: { type: 'string', default: '50' },
        events: { type: 'string', default: '20000' },
        seed: { type: 'string', default: '1' },
        now: { type: 'boolean', default: false },
        replace: { type: 'boolean', default: false }
      }
    }).values
  } catch (err) {
    throw new CliError(`${err instanceof Error ? err.message : String(err)}\n${usage}`, 2)
  }
  const integer = (name: string, text: string | undefined, min: number, max: number) => {
    const n = Number(text)
    if (!/^\d+$/.test(text ?? '') || n < min || n > max) throw new CliError(`--${name} must be an integer from ${min} to ${max}\n${usage}`, 2)
    return n
  }
  const guilds = integer('guilds', values.guilds, 1, 100_000)
  const users = integer('users', values.users, 1, 100_000_000)
  const events = integer('events', values.events, 0, 1_000_000_000)
  const seed = integer('seed', values.seed, 0, 2 ** 32 - 1)
  // Reproducible by default: events end at a fixed instant; --now ends them at today's midnight (UTC).
  const end = values.now ? new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000) : SYNTHETIC_END

  const handle = await openMigratedDatabase()
  try {
    process.stderr.write(`seeding ${events} events over ${guilds} guilds and ${users} users, the ${SYNTHETIC_DAYS} days before ${end.toISOString()} (seed ${seed})\n`)
    const started = performance.now()
    const summary = await loadActivity(handle, syntheticActivity({ guilds, users, events, seed, end }), {
      replace: values.replace,
      onProgress: (n) => process.stderr.write(`  ${n} events (${Math.round(n / ((performance.now() - started) / 1000))}/s)\n`)
    })
    console.log([
      `seeded ${summary.events} events in ${summary.seconds.toFixed(2)} s (${summary.eventsPerSecond} rows/s)${values.replace ? ', replacing all activity' : ''}`,
      `typing: ${summary.typing}, messages: ${summary.messages}; guilds: ${summary.guilds}, users: ${summary.users}, days: ${summary.days}`
    ].join('\n'))
  } finally {
    await handle.close()
  }
})
