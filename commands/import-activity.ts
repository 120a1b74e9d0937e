import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { resolve } from 'node:path'
import { createdAtRule, describeTypes, type ActivityEvent } from '../lib/activity/event.ts'
import { readActivityLines } from '../lib/activity/ndjson.ts'
import { loadActivity, LoadAborted } from '../db/activity-load.ts'

export const command = defineCommand({
  name: 'import-activity',
  opensDatabase: () => true,
  usage: 'npm run import:activity -- <file.ndjson> [--skip-invalid]',
  positionals: ['<file.ndjson>'],
  help: `
Adds guild activity events to the database from a file of JSON lines (blank lines skipped), one event a line:
  {"id": "…" (optional), "type": "…", "guildId": "…", "userId": "…", "username": "…",
   "createdAt": "2025-05-01T12:00:00Z", "channelId": "…", …}
with, per type:
  message, typing, message_delete   channelId
  reaction                          channelId; optional latencyMs (integer >= 0)
  presence                          status (online|idle|dnd|offline); optional clients (distinct of desktop, web, mobile)
  role_change                       roleId, change (added|removed)
  join, leave                       (channelId optional, as for presence and role_change)
An event whose (guildId, id) is already stored, or came earlier in the file, is a duplicate: counted and skipped.
An event dated more than ACTIVITY_MAX_FUTURE (default 5m) after the start of the import, or before
ACTIVITY_MIN_DATE (default 2015-01-01), is invalid.
By default one invalid line refuses the whole file and nothing is loaded; the invalid lines are listed.

options:
  --skip-invalid   load the valid lines and list the invalid ones (default: refuse the file)
  -h, --help       show this help and exit

${DATABASE_SETTINGS}`
}, { options: { 'skip-invalid': { type: 'boolean', default: false } } }, async ({ positionals, values }, io) => {
  const file = resolve(io.cwd, positionals[0]!)
  const info = await stat(file).catch(() => null)
  if (!info?.isFile()) throw new CliError(`file not found: ${file}`)
  const skipInvalid = values['skip-invalid']
  const config = loadConfig(io.env)
  // One range for the whole file: an import that runs for hours does not widen it.
  const createdAt = createdAtRule(config)(Date.now())

  const invalid: string[] = []
  let invalidCount = 0
  let lines = 0
  const started = performance.now()
  let lastReport = started
  const progress = () => {
    const seconds = (performance.now() - started) / 1000
    io.stderr.write(`  ${lines} lines read, ${invalidCount} invalid (${Math.round(lines / seconds)} lines/s)\n`)
  }
  // One pass: valid events stream into the load. Without --skip-invalid the first invalid line dooms
  // the load (rolled back at the end), but reading goes on so that every invalid line is reported.
  async function * events (): AsyncGenerator<ActivityEvent> {
    let doomed = false
    for await (const line of readActivityLines(createReadStream(file), { createdAt })) {
      lines = line.lineNumber
      if (line.error !== undefined) {
        invalidCount++
        if (invalid.length < SHOWN) invalid.push(`line ${line.lineNumber}: ${line.error}`)
        if (!skipInvalid) doomed = true
      } else if (!doomed) {
        yield line.event
      }
      if ((lines & 4095) === 0 && performance.now() - lastReport >= 1000) {
        lastReport = performance.now()
        progress()
      }
    }
    if (doomed) throw new LoadAborted('invalid lines')
  }
  const reportInvalid = (verb: string) => {
    for (const line of invalid) io.stderr.write(`${verb} ${line}\n`)
    if (invalidCount > invalid.length) io.stderr.write(`… and ${invalidCount - invalid.length} more invalid lines\n`)
  }

  const handle = await openMigratedDatabase(config)
  try {
    const summary = await loadActivity(handle, events())
    if (invalidCount) reportInvalid('skipped')
    io.stdout.write(`${[
      `loaded ${summary.events} events from ${file} in ${summary.seconds.toFixed(2)} s (${summary.eventsPerSecond} rows/s)`,
      `lines: ${lines}, loaded: ${summary.events}, invalid: ${invalidCount}${invalidCount ? ' (skipped)' : ''}`,
      `typing: ${summary.typing}, messages: ${summary.messages}; guilds: ${summary.guilds}, users: ${summary.users}, days: ${summary.days}`,
      `duplicates skipped: ${summary.duplicates}; by type: ${describeTypes(summary.types)}`
    ].join('\n')}\n`)
  } catch (err) {
    if (err instanceof LoadAborted) {
      reportInvalid('invalid')
      throw new CliError(`${file}: ${invalidCount} invalid line${invalidCount === 1 ? '' : 's'}; nothing was loaded (use --skip-invalid to load the valid lines)`)
    }
    throw err
  } finally {
    await handle.close()
  }
})

// Invalid lines listed one by one; the rest are counted.
const SHOWN = 20
