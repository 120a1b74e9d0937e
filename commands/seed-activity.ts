import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { createdAtRule, describeTypes } from '../lib/activity/event.ts'
import { loadActivity } from '../db/activity-load.ts'
import { activityEventCount } from '../db/activity.ts'
import { SYNTHETIC_DAYS, SYNTHETIC_END, syntheticActivity } from '../lib/activity/synthetic.ts'

const usage = 'npm run seed:activity -- [--guilds N] [--users N] [--events N] [--seed S] [--now] [--replace | --append]'

export const command = defineCommand({
  name: 'seed-activity',
  opensDatabase: () => true,
  usage,
  help: `
Seeds synthetic guild activity: events spread over the ${SYNTHETIC_DAYS} days before a fixed instant
(${SYNTHETIC_END.toISOString()}), the same data for the same arguments: every event type, with
lurkers, multi-device members, role churn, members whose activity shifts in the last week, deleters,
fast reactors and newcomers. Events carry ids made from the seed: appending the same seed twice adds
nothing the second time (the events are duplicates). The first guild is the demo guild,
where the demo users of the development sign-in act. A database that already holds activity is refused
unless --replace or --append says what to do with it.

options:
  --guilds N   number of guilds (default: 3)
  --users N    number of users (default: 50)
  --events N   number of events (default: 20000)
  --seed S     random seed, 0 to 4294967295 (default: 1)
  --now        end the events at today's midnight (UTC) instead of the fixed instant
  --replace    empty the activity tables first, in the same transaction
  --append     add to the activity already there
  -h, --help   show this help and exit

${DATABASE_SETTINGS}`
}, {
  options: {
    guilds: { type: 'string', default: '3' },
    users: { type: 'string', default: '50' },
    events: { type: 'string', default: '20000' },
    seed: { type: 'string', default: '1' },
    now: { type: 'boolean', default: false },
    replace: { type: 'boolean', default: false },
    append: { type: 'boolean', default: false }
  }
}, async ({ values }, io) => {
  const integer = (name: string, text: string | undefined, min: number, max: number) => {
    const n = Number(text)
    if (!/^\d+$/.test(text ?? '') || n < min || n > max) throw new CliError(`--${name} must be an integer from ${min} to ${max} (see --help)`, 2)
    return n
  }
  const guilds = integer('guilds', values.guilds, 1, 100_000)
  const users = integer('users', values.users, 1, 100_000_000)
  const events = integer('events', values.events, 0, 1_000_000_000)
  const seed = integer('seed', values.seed, 0, 2 ** 32 - 1)
  if (values.replace && values.append) throw new CliError('--replace and --append exclude each other (see --help)', 2)
  // Reproducible by default: events end at a fixed instant; --now ends them at today's midnight (UTC).
  const end = values.now ? new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000) : SYNTHETIC_END

  const config = loadConfig(io.env)
  // The seed's events must be dates that ingestion would accept.
  const first = new Date(end.getTime() - SYNTHETIC_DAYS * 86_400_000)
  const accepted = createdAtRule(config)(Date.now())
  if (first.getTime() < accepted.notBefore || end.getTime() > accepted.notAfter) {
    throw new CliError(`the seed's events (${first.toISOString()} to ${end.toISOString()}) fall outside the accepted dates (from ACTIVITY_MIN_DATE, ${new Date(accepted.notBefore).toISOString()}, to ACTIVITY_MAX_FUTURE after now); nothing was seeded`)
  }
  const handle = await openMigratedDatabase(config)
  try {
    // A second run must not quietly double the data.
    if (!values.replace && !values.append) {
      const count = await activityEventCount(handle.db)
      if (count > 0) {
        throw new CliError(`the database already holds ${count} activity events; nothing was seeded (use --replace to replace them or --append to add to them)`)
      }
    }
    io.stderr.write(`seeding ${events} events over ${guilds} guilds and ${users} users, the ${SYNTHETIC_DAYS} days before ${end.toISOString()} (seed ${seed})\n`)
    const started = performance.now()
    const summary = await loadActivity(handle, syntheticActivity({ guilds, users, events, seed, end }), {
      replace: values.replace,
      onProgress: (n) => io.stderr.write(`  ${n} events (${Math.round(n / ((performance.now() - started) / 1000))}/s)\n`)
    })
    io.stdout.write(`${[
      `seeded ${summary.events} events in ${summary.seconds.toFixed(2)} s (${summary.eventsPerSecond} rows/s)${values.replace ? ', replacing all activity' : values.append ? ', added to the activity already there' : ''}`,
      `typing: ${summary.typing}, messages: ${summary.messages}; guilds: ${summary.guilds}, users: ${summary.users}, days: ${summary.days}`,
      `duplicates skipped: ${summary.duplicates}; by type: ${describeTypes(summary.types)}`
    ].join('\n')}\n`)
  } finally {
    await handle.close()
  }
})
