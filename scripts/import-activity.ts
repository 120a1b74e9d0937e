import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { parseActivityLine, type ActivityEvent } from '../lib/activity/event.ts'
import { loadActivity, LoadAborted } from '../lib/activity/load.ts'

const usage = 'usage: npm run import:activity -- <file.ndjson> [--skip-invalid]'
const SHOWN = 20

await runCli(async () => {
  let parsed
  try {
    parsed = parseArgs({ allowPositionals: true, options: { 'skip-invalid': { type: 'boolean', default: false } } })
  } catch (err) {
    throw new CliError(`${err instanceof Error ? err.message : String(err)}\n${usage}`, 2)
  }
  const { positionals, values } = parsed
  if (positionals.length !== 1) throw new CliError(usage, 2)
  const file = positionals[0]
  const info = await stat(file).catch(() => null)
  if (!info?.isFile()) throw new CliError(`file not found: ${file}`)
  const skipInvalid = values['skip-invalid']

  const invalid: string[] = []
  let invalidCount = 0
  let lines = 0
  const started = performance.now()
  let lastReport = started
  // One pass: valid events stream into the load; the first invalid line (without --skip-invalid)
  // dooms the load, but reading goes on so that every invalid line is reported.
  async function* events(): AsyncGenerator<ActivityEvent> {
    let doomed = false
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      lines++
      if (!line.trim()) continue
      const result = parseActivityLine(line)
      if (typeof result === 'string') {
        invalidCount++
        if (invalid.length < SHOWN) invalid.push(`line ${lines}: ${result}`)
        if (!skipInvalid) doomed = true
        continue
      }
      if (!doomed) yield result
      const now = performance.now()
      if (now - lastReport > 1000) {
        lastReport = now
        process.stderr.write(`  ${lines} lines read (${Math.round(lines / ((now - started) / 1000))}/s)\n`)
      }
    }
    if (doomed) throw new LoadAborted('invalid lines')
  }

  const handle = await openMigratedDatabase()
  try {
    const summary = await loadActivity(handle, events())
    for (const line of invalid) console.error(`skipped ${line}`)
    if (invalidCount > invalid.length) console.error(`skipped ${invalidCount - invalid.length} more invalid lines`)
    console.log([
      `loaded ${summary.events} events from ${file} in ${summary.seconds.toFixed(2)} s (${Math.round(summary.events / summary.seconds)} events/s)`,
      `lines: ${lines}, invalid: ${invalidCount}${invalidCount ? ' (skipped)' : ''}`,
      `typing: ${summary.typing}, messages: ${summary.messages}; guilds: ${summary.guilds}, users: ${summary.users}, days: ${summary.days}`
    ].join('\n'))
  } catch (err) {
    if (err instanceof LoadAborted) {
      for (const line of invalid) console.error(`invalid ${line}`)
      if (invalidCount > invalid.length) console.error(`… and ${invalidCount - invalid.length} more invalid lines`)
      throw new CliError(`${file}: ${invalidCount} invalid line${invalidCount === 1 ? '' : 's'}; nothing was loaded (use --skip-invalid to load the valid lines)`)
    }
    throw err
  } finally {
    await handle.close()
  }
})
