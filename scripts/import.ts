import { parseArgs } from 'node:util'
import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { openKmlSource, KmlSourceError } from '../lib/kml/source.ts'
import { KmlError } from '../lib/kml/reader.ts'
import { isValidTimeZone } from '../lib/timeline/timezone.ts'
import { importPlacemarks, type ImportSummary } from '../lib/import/placemarks.ts'
import type { DatabaseHandle } from '../db/index.ts'

const usage = 'usage: npm run import -- <file.kml|file.kmz> [--timezone <IANA zone>] [--dry-run]'

function printSummary(s: ImportSummary): void {
  const skipped = Object.entries(s.skipped)
  const lines = [
    `${s.dryRun ? 'dry run (nothing written)' : `imported ${s.source} as dataset version ${s.version}`} in ${s.seconds.toFixed(2)} s`,
    `placemarks: ${s.placemarks} (${Object.entries(s.geometryTypes).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `styles: ${s.styles} (Style ${s.styleKinds.Style}, StyleMap ${s.styleKinds.StyleMap})`,
    `folders: ${s.folders}`,
    `timeline events: ${s.timelineEvents} (${s.timestampedEvents} with a timestamp, ${s.timelineEvents - s.timestampedEvents} date only; timezone ${s.timeZone})`,
    `skipped: ${skipped.length ? skipped.map(([k, v]) => `${v} ${k}`).join(', ') : 'none'}`
  ]
  console.log(lines.join('\n'))
}

await runCli(async () => {
  let parsed
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: { timezone: { type: 'string', default: 'UTC' }, 'dry-run': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } }
    })
  } catch (err) {
    throw new CliError(`${err instanceof Error ? err.message : String(err)}\n${usage}`, 2)
  }
  const { values, positionals } = parsed
  if (values.help) {
    console.log(usage)
    return
  }
  if (positionals.length !== 1) throw new CliError(usage, 2)
  const timeZone = values.timezone ?? 'UTC'
  if (!isValidTimeZone(timeZone)) throw new CliError(`unknown timezone "${timeZone}" (use an IANA name such as America/Los_Angeles)`, 2)

  const file = positionals[0]
  let source
  try {
    source = await openKmlSource(file)
  } catch (err) {
    if (err instanceof KmlSourceError) throw new CliError(err.message)
    throw err
  }
  let handle: DatabaseHandle | null = null
  try {
    if (!values['dry-run']) handle = await openMigratedDatabase()
    const started = performance.now()
    let lastReport = 0
    const summary = await importPlacemarks(handle, source.chunks, {
      timeZone,
      source: file.split('/').pop() ?? file,
      dryRun: values['dry-run'],
      onProgress: (n) => {
        const now = performance.now()
        if (now - lastReport < 1000) return
        lastReport = now
        const rate = Math.round(n / ((now - started) / 1000))
        process.stderr.write(`  ${n} placemarks read (${rate}/s)\n`)
      }
    })
    printSummary(summary)
    const perSecond = summary.seconds > 0 ? Math.round(summary.placemarks / summary.seconds) : summary.placemarks
    console.log(`throughput: ${perSecond} placemarks/s, peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`)
  } catch (err) {
    if (err instanceof KmlError || err instanceof KmlSourceError) throw new CliError(`${file}: ${err.message}; nothing was imported`)
    throw err
  } finally {
    source.close()
    await handle?.close()
  }
})
