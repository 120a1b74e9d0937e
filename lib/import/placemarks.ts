/**
 * The placemark import's domain: KML read into rows, counted into a summary, handed to a sink (the
 * database's, db/placemark-import.ts, or the dry run's). No SQL here.
 */
import { readKmlBatches, type DecodeReport, type KmlLimits, type KmlPlacemark } from '../kml/reader.ts'
import { meridiemInstant, parseNameDate, type NameDate } from '../timeline/name-date.ts'
import { MeridiemInference } from '../timeline/meridiem.ts'
import { boundsOf, packGeometry, type Box } from '../geo/box.ts'
import { hilbertKey } from '../geo/hilbert.ts'
import { placemarkTime, writtenTime, type WrittenTime } from '../kml/time.ts'
import type { KmzIcon } from '../kml/source.ts'
import { DatasetFacts, type DatasetFactsT } from './dataset-facts.ts'

export interface ImportOptions {
  timeZone: string
  source: string
  // A KMZ's images (lib/kml/source.ts), stored with the dataset, and those its limits left out.
  icons?: KmzIcon[]
  skippedIcons?: { name: string; reason: string }[]
  dryRun?: boolean
  onProgress?: (placemarks: number) => void
  limits?: Partial<KmlLimits>
}

export interface ImportSummary {
  source: string
  timeZone: string
  dryRun: boolean
  placemarks: number
  geometryTypes: Record<string, number>
  styles: number
  styleKinds: { Style: number; StyleMap: number }
  folders: number
  skipped: Record<string, number>
  timelineEvents: number
  timestampedEvents: number
  // Timeline events whose time had no AM/PM and took it from a name of the same date.
  inferredTimes: number
  // A KMZ's images kept with the dataset (those left out are among `skipped`).
  icons: number
  // The encoding the file was read in, and its invalid byte sequences (each read as U+FFFD).
  encoding: string | null
  invalidSequences: number
  firstInvalidLine: number | null
  version: number | null
  seconds: number
}

// Column order of the import's staging table (db/placemark-import.ts): the placemarks table's columns
// but those the database derives (the serialized summary, the bounds as float8), then the key the rows
// are written to the placemarks table in.
export const COLUMNS = ['id', 'name', 'description', 'style_id', 'folder_path', 'geometry_type', 'geometry', 'coordinates_raw',
  'media_links', 'extended_data', 'bbox', 'event_date', 'event_timestamp', 'event_sort', 'created_at', 'time_begin', 'time_end',
  'kml_time', 'shape', 'spatial_key'] as const

export type Row = [number, string, string | null, string | null, string[], string, string, string, string[], KmlPlacemark['extendedData'], string, string | null, string | null, string | null, string, string | null, string | null,
  WrittenTime | null, number[] | null, number]

// The bounds as PostgreSQL's box text (upper right corner first). A point's corners are its position, whose
// numbers its GeoJSON text already holds as JavaScript writes them (`[x,y]` at its end): most placemarks are
// points, and writing a number out is the costly part.
function boxText (g: KmlPlacemark['geometry'], b: ReturnType<typeof boundsOf>, geometryJson: string): string {
  if (g.type === 'Point') {
    const xy = geometryJson.slice(geometryJson.lastIndexOf('[') + 1, geometryJson.length - 2)
    return `(${xy}),(${xy})`
  }
  return `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`
}

export function toRow (id: number, p: KmlPlacemark, timeZone: string, createdAt: string, when: NameDate | null = parseNameDate(p.name, timeZone), b: Box = boundsOf(p.geometry)): Row {
  const time = placemarkTime(p.time)
  const geometry = JSON.stringify(p.geometry)
  return [
    id, p.name, p.description, p.styleId, p.folderPath, p.geometry.type, geometry, p.coordinatesRaw,
    p.mediaLinks, p.extendedData, boxText(p.geometry, b, geometry),
    when?.date ?? null, when?.timestamp ?? null, when?.sortKey ?? null, createdAt, time.begin, time.end,
    // The time element as written, for the export to write back.
    writtenTime(p.time),
    // The geometry packed for the box query's exact test; a point's bounds decide by themselves.
    p.geometry.type === 'Point' ? null : packGeometry(p.geometry),
    hilbertKey((b.minLon + b.maxLon) / 2, (b.minLat + b.maxLat) / 2)
  ]
}

/** A timeline event whose name's time had no AM/PM and took one from a neighbour: its instant read so. */
export interface InferredTime { id: number; timestamp: string }

export interface StyleRecord { id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }
export interface FolderRecord { id: number; name: string; path: string[] }

/**
 * Where parsed items go: the database, swapped in whole (db/placemark-import.ts), or nowhere for a dry run. Styles and
 * folders are counted into the summary by the sink, which is what tells duplicate style ids apart.
 */
export interface Sink {
  // Each returns a promise only when it has to wait for the database.
  placemark(row: Row): Promise<void> | undefined
  style(style: StyleRecord): Promise<void> | undefined
  folder(folder: FolderRecord): Promise<void> | undefined
  // The events whose time was inferred, once the whole file is read (before finish).
  inferredTimes(times: InferredTime[]): Promise<void>
  // The whole file read: the dataset's facts (lib/import/dataset-facts.ts) go in with it.
  finish(summary: ImportSummary, facts: DatasetFactsT): Promise<number | null>
  abort(): Promise<void>
}

const DUPLICATE_STYLE = 'duplicate style id'

export function countStyle (summary: ImportSummary, kind: 'Style' | 'StyleMap'): void {
  summary.styles++
  summary.styleKinds[kind]++
}

export function countDuplicates (summary: ImportSummary, n: number): void {
  if (n > 0) summary.skipped[DUPLICATE_STYLE] = (summary.skipped[DUPLICATE_STYLE] ?? 0) + n
}

// A dry run writes nothing; it remembers style ids (not styles) to count the duplicates.
export function dryRunSink (summary: ImportSummary): Sink {
  const styleIds = new Set<string>()
  return {
    placemark: () => undefined,
    style: (s) => {
      if (styleIds.has(s.id)) countDuplicates(summary, 1)
      else {
        styleIds.add(s.id)
        countStyle(summary, s.kind)
      }
      return undefined
    },
    folder: () => undefined,
    inferredTimes: async () => {},
    finish: async () => null,
    abort: async () => {}
  }
}

const ENCODING_NAMES: Record<string, string> = { 'utf-8': 'UTF-8', 'utf-16le': 'UTF-16LE', 'utf-16be': 'UTF-16BE', 'iso-8859-1': 'ISO-8859-1' }

/** A summary with nothing counted yet. */
export function emptySummary (options: ImportOptions): ImportSummary {
  return {
    source: options.source,
    timeZone: options.timeZone,
    dryRun: Boolean(options.dryRun),
    placemarks: 0,
    geometryTypes: { Point: 0, LineString: 0, Polygon: 0 },
    styles: 0,
    styleKinds: { Style: 0, StyleMap: 0 },
    folders: 0,
    skipped: {},
    timelineEvents: 0,
    timestampedEvents: 0,
    inferredTimes: 0,
    icons: options.icons?.length ?? 0,
    encoding: null,
    invalidSequences: 0,
    firstInvalidLine: null,
    version: null,
    seconds: 0
  }
}

/**
 * Reads a KML stream into a sink (the database's, or the dry run's), counting into the summary; the
 * sink's finish() decides what the import leaves behind, its abort() undoes a failed one.
 */
export async function runImport (chunks: AsyncIterable<string | Buffer>, sink: Sink, summary: ImportSummary, options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now()
  const createdAt = new Date().toISOString()
  const skip = (reason: string) => { summary.skipped[reason] = (summary.skipped[reason] ?? 0) + 1 }
  const decoding: DecodeReport = { encoding: null, invalidSequences: 0, firstInvalidLine: null }
  for (const icon of options.skippedIcons ?? []) skip(`KMZ image left out (${icon.reason})`)
  // Ambiguous times in names (no AM/PM), read once their neighbours are known (SPEC: the timeline).
  const inferred: InferredTime[] = []
  const facts = new DatasetFacts()
  const meridiems = new MeridiemInference<{ id: number; date: string; clock: NonNullable<NameDate['ambiguous']> }>((e, meridiem) => {
    inferred.push({ id: e.id, timestamp: meridiemInstant(e.date, e.clock, meridiem, options.timeZone) })
  })
  try {
    for await (const batch of readKmlBatches(chunks, { limits: options.limits, report: decoding })) {
      for (const item of batch) {
        if (item.kind === 'placemark') {
          const id = summary.placemarks + 1
          const when = parseNameDate(item.placemark.name, options.timeZone)
          if (when?.meridiem) meridiems.explicit(id, when.date, when.meridiem)
          else if (when?.ambiguous) meridiems.ambiguous(id, when.date, { id, date: when.date, clock: when.ambiguous })
          const bounds = boundsOf(item.placemark.geometry)
          const row = toRow(id, item.placemark, options.timeZone, createdAt, when, bounds)
          summary.placemarks++
          summary.geometryTypes[row[5]]++
          facts.add(item.placemark.geometry.type, bounds, row[4], row[15], row[16])
          if (row[13]) summary.timelineEvents++
          if (row[12]) summary.timestampedEvents++
          // A promise only when the database pushes back.
          const pending = sink.placemark(row)
          if (pending) await pending
          if (summary.placemarks % 5000 === 0) options.onProgress?.(summary.placemarks)
        } else if (item.kind === 'style') {
          const pending = sink.style({ id: item.style.id, kind: item.style.kind, definition: item.style.definition })
          if (pending) await pending
        } else if (item.kind === 'folder') {
          summary.folders++
          const pending = sink.folder({ id: summary.folders, name: item.folder.name, path: item.folder.path })
          if (pending) await pending
        } else {
          skip(item.reason)
        }
      }
    }
    summary.encoding = decoding.encoding
    summary.invalidSequences = decoding.invalidSequences
    summary.firstInvalidLine = decoding.firstInvalidLine
    if (decoding.invalidSequences > 0) {
      // Listed with the skipped items, so that the import's report shows it.
      const name = ENCODING_NAMES[decoding.encoding ?? ''] ?? (decoding.encoding ?? '').toUpperCase()
      summary.skipped[`invalid ${name} byte sequences, read as U+FFFD (first at line ${decoding.firstInvalidLine})`] = decoding.invalidSequences
    }
    meridiems.end()
    summary.inferredTimes = inferred.length
    if (inferred.length > 0) await sink.inferredTimes(inferred)
    summary.version = await sink.finish(summary, facts.result())
  } catch (err) {
    await sink.abort()
    throw err
  }
  options.onProgress?.(summary.placemarks)
  summary.seconds = (performance.now() - started) / 1000
  return summary
}
