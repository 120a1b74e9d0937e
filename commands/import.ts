import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase, type CommandIo } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { isAbsolute, resolve } from 'node:path'
import { ByteProgress } from './progress.ts'
import { openKmlSource, KmlSourceError } from '../lib/kml/source.ts'
import { KmlError } from '../lib/kml/reader.ts'
import { isValidTimeZone } from '../lib/timeline/timezone.ts'
import { type ImportSummary } from '../lib/import/placemarks.ts'
import { importPlacemarks } from '../db/placemark-import.ts'
import type { DatabaseHandle } from '../db/index.ts'

export const command = defineCommand({
  name: 'import',
  opensDatabase: (values) => !values['dry-run'],
  usage: 'npm run import -- <file.kml|file.kmz> [--timezone <IANA zone>] [--dry-run]',
  positionals: ['<file.kml|file.kmz>'],
  help: `
Imports a KML document, or the KML inside a KMZ archive, as the new version of the placemark dataset:
placemarks, styles, folders and the timeline events dated by the placemarks' names. All or nothing: a
file that fails to parse leaves the current dataset as it was. On a terminal, progress shows the bytes
read against the size of the KML (a percentage and an estimate of the time left); otherwise one summary
line is written when reading ends. On PostgreSQL the import opens three connections: one holds its
transaction and the two others load and index the new table side by side.

options:
  --timezone <IANA zone>   zone of the local times in placemark names, e.g. America/Los_Angeles (default: UTC)
  --dry-run                parse and count, write nothing (no database is opened)
  -h, --help               show this help and exit

${DATABASE_SETTINGS}`
}, { options: { timezone: { type: 'string', default: 'UTC' }, 'dry-run': { type: 'boolean', default: false } } }, async ({ values, positionals }, io) => {
  await importFile(positionals[0]!, values.timezone ?? 'UTC', values['dry-run'] ?? false, io)
})

function printSummary (s: ImportSummary, io: CommandIo): void {
  const skipped = Object.entries(s.skipped)
  const lines = [
    `${s.dryRun ? 'dry run (nothing written)' : `imported ${s.source} as dataset version ${s.version}`} in ${s.seconds.toFixed(2)} s`,
    `placemarks: ${s.placemarks} (${Object.entries(s.geometryTypes).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `styles: ${s.styles} (Style ${s.styleKinds.Style}, StyleMap ${s.styleKinds.StyleMap})`,
    `folders: ${s.folders}`,
    ...(s.icons > 0 ? [`images: ${s.icons} (the KMZ's icons, served at /api/v1/icons/<path>)`] : []),
    ...(s.inferredTimes > 0 ? [`times with AM/PM taken from a neighbour: ${s.inferredTimes}`] : []),
    `timeline events: ${s.timelineEvents} (${s.timestampedEvents} with a timestamp, ${s.timelineEvents - s.timestampedEvents} date only; timezone ${s.timeZone})`,
    `skipped: ${skipped.length ? skipped.map(([k, v]) => `${v} ${k}`).join(', ') : 'none'}`
  ]
  io.stdout.write(`${lines.join('\n')}\n`)
}

async function importFile (file: string, timeZone: string, dryRun: boolean, io: CommandIo): Promise<void> {
  if (!isValidTimeZone(timeZone)) throw new CliError(`unknown timezone "${timeZone}" (use an IANA name such as America/Los_Angeles)`, 2)

  let source
  // Relative to where the command was run (which, run inside a server, is not the server's directory);
  // messages name the file as it was given.
  const path = isAbsolute(file) ? file : resolve(io.cwd, file)
  try {
    source = await openKmlSource(path)
  } catch (err) {
    if (err instanceof KmlSourceError) throw new CliError(err.message.replaceAll(path, file))
    throw err
  }
  let handle: DatabaseHandle | null = null
  const name = file.split('/').pop() ?? file
  let progress: ByteProgress | null = null
  try {
    if (!dryRun) handle = await openMigratedDatabase(loadConfig(io.env))
    progress = new ByteProgress(source.kind === 'kmz' ? `${name} (${source.entryName})` : name, source.size ?? null, 'placemarks', io.stderr)
    const counter = progress
    const summary = await importPlacemarks(handle, counter.count(source.chunks), {
      timeZone,
      source: name,
      dryRun,
      icons: source.icons,
      skippedIcons: source.skippedIcons,
      onProgress: (n) => counter.setItems(n)
    })
    progress.done()
    progress = null
    printSummary(summary, io)
    const perSecond = summary.seconds > 0 ? Math.round(summary.placemarks / summary.seconds) : summary.placemarks
    io.stdout.write(`throughput: ${perSecond} placemarks/s, peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB\n`)
  } catch (err) {
    progress?.abandon()
    if (err instanceof KmlError || err instanceof KmlSourceError) throw new CliError(`${file}: ${err.message}; nothing was imported`)
    throw err
  } finally {
    source.close()
    await handle?.close()
  }
}
