import type { PoolClient } from 'pg'
import { copyText, copyWriter } from '../db/copy-writer.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { DATASET_CHANNEL } from '../../db/dataset-changes.ts'
import { readKmlBatches, type DecodeReport, type KmlLimits, type KmlPlacemark } from '../kml/reader.ts'
import { parseNameDate } from '../timeline/name-date.ts'
import { boundsOf } from '../geo/box.ts'

/**
 * How the import takes the table swap's ACCESS EXCLUSIVE lock on placemarks. A reader's transaction
 * holds its lock until it ends, and readers that come after queue behind a waiting import: so the
 * import waits at most timeoutMs at a time, then steps back (letting the queue through) and tries
 * again after a backoff doubling from firstBackoffMs to maxBackoffMs, attempts times in all.
 */
export interface SwapLockOptions {
  timeoutMs: number
  attempts: number
  firstBackoffMs: number
  maxBackoffMs: number
}

export const SWAP_LOCK: Readonly<SwapLockOptions> = Object.freeze({ timeoutMs: 2000, attempts: 8, firstBackoffMs: 250, maxBackoffMs: 4000 })

// Key of the transaction-level advisory lock held by a running import ('kmli').
export const IMPORT_LOCK_KEY = 0x6b6d6c69

/** Another import holds the import lock; this one wrote nothing. */
export class ImportBusyError extends Error {
  override name = 'ImportBusyError'
}

/** The placemarks table stayed in use past every attempt at the swap; nothing was imported. */
export class SwapLockError extends Error {
  override name = 'SwapLockError'
}

export interface ImportOptions {
  timeZone: string
  source: string
  dryRun?: boolean
  onProgress?: (placemarks: number) => void
  swapLock?: Partial<SwapLockOptions>
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
  // The encoding the file was read in, and its invalid byte sequences (each read as U+FFFD).
  encoding: string | null
  invalidSequences: number
  firstInvalidLine: number | null
  version: number | null
  seconds: number
}

// Column order of the shadow table's COPY and of the batch insert.
const COLUMNS = ['id', 'name', 'description', 'style_id', 'folder_path', 'geometry_type', 'geometry', 'coordinates_raw',
  'media_links', 'extended_data', 'bbox', 'event_date', 'event_timestamp', 'event_sort', 'created_at'] as const

type Row = [number, string, string | null, string | null, string[], string, string, string, string[], string, string, string | null, string | null, string | null, string]

function toRow (id: number, p: KmlPlacemark, timeZone: string, createdAt: string): Row {
  const b = boundsOf(p.geometry)
  const when = parseNameDate(p.name, timeZone)
  return [
    id, p.name, p.description, p.styleId, p.folderPath, p.geometry.type, JSON.stringify(p.geometry), p.coordinatesRaw,
    p.mediaLinks, JSON.stringify(p.extendedData), `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`,
    when?.date ?? null, when?.timestamp ?? null, when?.sortKey ?? null, createdAt
  ]
}

const arrayLiteral = (items: string[]) => `{${items.map((s) => `"${s.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`

function copyLine (row: Row): string {
  let line = ''
  for (let i = 0; i < row.length; i++) {
    const v = row[i]
    const text = v === null ? '\\N' : Array.isArray(v) ? copyText(arrayLiteral(v)) : typeof v === 'number' ? String(v) : copyText(v)
    line += i === 0 ? text : `\t${text}`
  }
  return `${line}\n`
}

interface StyleRecord { id: string; kind: 'Style' | 'StyleMap'; definition: string }
interface FolderRecord { id: number; name: string; path: string[] }

/**
 * Where parsed items go: the database inside one transaction, or nowhere for a dry run. Styles and
 * folders are counted into the summary by the sink, which is what tells duplicate style ids apart.
 */
interface Sink {
  // Each returns a promise only when it has to wait for the database.
  placemark(row: Row): Promise<void> | undefined
  style(style: StyleRecord): Promise<void> | undefined
  folder(folder: FolderRecord): Promise<void> | undefined
  finish(summary: ImportSummary): Promise<number | null>
  abort(): Promise<void>
}

const DUPLICATE_STYLE = 'duplicate style id'

function countStyle (summary: ImportSummary, kind: 'Style' | 'StyleMap'): void {
  summary.styles++
  summary.styleKinds[kind]++
}

function countDuplicates (summary: ImportSummary, n: number): void {
  if (n > 0) summary.skipped[DUPLICATE_STYLE] = (summary.skipped[DUPLICATE_STYLE] ?? 0) + n
}

// A dry run writes nothing; it remembers style ids (not styles) to count the duplicates.
function dryRunSink (summary: ImportSummary): Sink {
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
    finish: async () => null,
    abort: async () => {}
  }
}

// Styles and folders are written in batches of about this many (or of BATCH_CHARS of JSON), so
// memory holds one batch of them whatever the file.
const STYLE_BATCH = 1000
const FOLDER_BATCH = 5000
const BATCH_CHARS = 4 * 1024 * 1024

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The dataset loads into a shadow table (COPY FREEZE: created in this transaction, so its rows go in
// frozen and all-visible, with no VACUUM needed for index-only scans); the other indexes are built once
// at the end, statistics gathered, and the tables swap.
// Readers keep using the old table until then, and the swap holds its lock only until the commit.
async function beginShadowImport (client: PoolClient): Promise<void> {
  await client.query('BEGIN')
  // One import at a time: a second one is refused at once rather than left to wait or deadlock.
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [IMPORT_LOCK_KEY])
  if (!rows[0].locked) throw new ImportBusyError('another import is running; try again when it has finished (nothing was imported)')
  await client.query('DROP TABLE IF EXISTS placemarks_next')
  await client.query('CREATE TABLE placemarks_next (LIKE placemarks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
  // The GiST index is kept up during the load rather than built after it: the database has a core to
  // spare while the file is parsed, and a build at the end took about 6 s per million placemarks.
  await client.query('CREATE INDEX placemarks_next_bbox_idx ON placemarks_next USING gist (bbox) INCLUDE (id)')
  await client.query('DELETE FROM styles')
  await client.query('DELETE FROM folders')
}

/**
 * Takes the ACCESS EXCLUSIVE lock on placemarks for the swap, waiting at most timeoutMs at a time so
 * that readers queued behind the import's request are held up no longer than that.
 */
async function lockForSwap (client: PoolClient, lock: SwapLockOptions): Promise<void> {
  const timeout = Math.max(1, Math.round(lock.timeoutMs))
  let backoff = lock.firstBackoffMs
  for (let attempt = 1; ; attempt++) {
    // A failed statement would doom the transaction; rolling back to the savepoint keeps it.
    await client.query('SAVEPOINT swap_lock')
    await client.query(`SET LOCAL lock_timeout = ${timeout}`)
    try {
      await client.query('LOCK TABLE placemarks IN ACCESS EXCLUSIVE MODE')
      await client.query('RELEASE SAVEPOINT swap_lock')
      return
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03') throw err
      await client.query('ROLLBACK TO SAVEPOINT swap_lock')
      if (attempt >= lock.attempts) {
        throw new SwapLockError(`the placemarks table stayed in use by other transactions (${lock.attempts} attempts, waiting ${timeout} ms each); nothing was imported`)
      }
      await sleep(backoff)
      backoff = Math.min(backoff * 2, lock.maxBackoffMs)
    }
  }
}

async function commitShadowImport (client: PoolClient, summary: ImportSummary, lock: SwapLockOptions): Promise<number> {
  await client.query('ALTER TABLE placemarks_next ADD CONSTRAINT placemarks_next_pkey PRIMARY KEY (id)')
  await client.query('CREATE INDEX placemarks_next_folder_path_idx ON placemarks_next USING gin (folder_path)')
  await client.query('CREATE INDEX placemarks_next_timeline_idx ON placemarks_next (event_sort, id) WHERE event_sort IS NOT NULL')
  // Statistics before the swap (they follow the table through the rename), not under its lock.
  await client.query('ANALYZE placemarks_next')
  await lockForSwap(client, lock)
  await client.query('DROP TABLE placemarks')
  await client.query('ALTER TABLE placemarks_next RENAME TO placemarks')
  await client.query('ALTER TABLE placemarks RENAME CONSTRAINT placemarks_next_pkey TO placemarks_pkey')
  for (const name of ['bbox', 'folder_path', 'timeline']) {
    await client.query(`ALTER INDEX placemarks_next_${name}_idx RENAME TO placemarks_${name}_idx`)
  }
  const { rows } = await client.query<{ version: string }>(
    `INSERT INTO dataset (id, version, source, timezone, imported_at, summary)
     VALUES (1, 1, $1, $2, now(), $3)
     ON CONFLICT (id) DO UPDATE SET version = dataset.version + 1, source = EXCLUDED.source,
       timezone = EXCLUDED.timezone, imported_at = EXCLUDED.imported_at, summary = EXCLUDED.summary
     RETURNING version`,
    [summary.source, summary.timeZone, JSON.stringify({ placemarks: summary.placemarks, skipped: summary.skipped })]
  )
  const version = Number(rows[0].version)
  // Delivered to every listening server at the commit, and never if the import rolls back.
  await client.query('SELECT pg_notify($1, $2)', [DATASET_CHANNEL, String(version)])
  await client.query('COMMIT')
  return version
}

async function databaseSink (handle: DatabaseHandle, summary: ImportSummary, lock: SwapLockOptions): Promise<Sink> {
  const client = await handle.pool.connect()
  let done = false
  const release = (err?: Error) => {
    if (done) return
    done = true
    client.release(err)
  }
  try {
    await beginShadowImport(client)
  } catch (err) {
    const rolledBack = await client.query('ROLLBACK').then(() => true, () => false)
    release(rolledBack ? undefined : (err as Error))
    throw err
  }

  // Styles and folders wait here one batch at a time. The first of a repeated style id is kept; the
  // database tells the later ones apart, so no list of ids is kept in memory.
  let styles: StyleRecord[] = []
  let styleChars = 0
  let folders: FolderRecord[] = []
  let folderChars = 0
  const writeStyles = async () => {
    if (!styles.length) return
    const batch = styles
    styles = []
    styleChars = 0
    const { rows } = await client.query<{ kind: 'Style' | 'StyleMap' }>(
      `INSERT INTO styles (id, kind, definition)
       SELECT id, kind, definition
       FROM ROWS FROM (json_to_recordset($1::json) AS (id text, kind text, definition jsonb)) WITH ORDINALITY AS s(id, kind, definition, n)
       ORDER BY n
       ON CONFLICT (id) DO NOTHING
       RETURNING kind`,
      [JSON.stringify(batch)]
    )
    for (const row of rows) countStyle(summary, row.kind)
    countDuplicates(summary, batch.length - rows.length)
  }
  const writeFolders = async () => {
    if (!folders.length) return
    const batch = folders
    folders = []
    folderChars = 0
    await client.query('INSERT INTO folders (id, name, path) SELECT * FROM json_to_recordset($1::json) AS f(id int, name text, path text[])', [JSON.stringify(batch)])
  }
  const styleFull = () => styles.length >= STYLE_BATCH || styleChars >= BATCH_CHARS
  const folderFull = () => folders.length >= FOLDER_BATCH || folderChars >= BATCH_CHARS
  const queueStyle = (s: StyleRecord) => {
    styles.push(s)
    styleChars += s.id.length + s.definition.length + 32
    return styleFull()
  }
  const queueFolder = (f: FolderRecord) => {
    folders.push(f)
    folderChars += f.name.length + 32
    for (const name of f.path) folderChars += name.length + 4
    return folderFull()
  }
  const rollback = async () => {
    try {
      await client.query('ROLLBACK')
      release()
    } catch (err) {
      release(err as Error)
    }
  }

  if (handle.kind === 'postgres') {
    // PostgreSQL: a COPY stream fed while parsing, so the server loads rows as the file is read. A
    // connection runs one statement at a time, so a full batch of styles or folders ends the COPY,
    // goes in, and a new COPY carries on (still FREEZE: the table is this transaction's own).
    const startCopy = () => copyWriter(client, `COPY placemarks_next (${COLUMNS.join(', ')}) FROM STDIN WITH (FREEZE)`)
    let copy = startCopy()
    const flushBatches = async () => {
      await copy.end()
      await writeStyles()
      await writeFolders()
      copy = startCopy()
    }
    return {
      placemark: (row) => copy.write(copyLine(row)),
      style: (s) => (queueStyle(s) ? flushBatches() : undefined),
      folder: (f) => (queueFolder(f) ? flushBatches() : undefined),
      finish: async (summary) => {
        await copy.end()
        await writeStyles()
        await writeFolders()
        const version = await commitShadowImport(client, summary, lock)
        release()
        return version
      },
      abort: async () => {
        copy.destroy()
        await rollback()
      }
    }
  }

  // PGlite has no COPY from a client stream: batches go in as one JSON parameter each.
  let batch: Record<string, unknown>[] = []
  const insertBatch = async () => {
    if (!batch.length) return
    const json = JSON.stringify(batch)
    batch = []
    await client.query('INSERT INTO placemarks_next SELECT * FROM json_populate_recordset(NULL::placemarks_next, $1::json)', [json])
  }
  return {
    placemark: (row) => {
      const record: Record<string, unknown> = {}
      COLUMNS.forEach((c, i) => { record[c] = row[i] })
      record.extended_data = JSON.parse(row[9])
      batch.push(record)
      return batch.length >= 1000 ? insertBatch() : undefined
    },
    style: (s) => (queueStyle(s) ? writeStyles() : undefined),
    folder: (f) => (queueFolder(f) ? writeFolders() : undefined),
    finish: async (summary) => {
      await insertBatch()
      await writeStyles()
      await writeFolders()
      const version = await commitShadowImport(client, summary, lock)
      release()
      return version
    },
    abort: rollback
  }
}

const ENCODING_NAMES: Record<string, string> = { 'utf-8': 'UTF-8', 'utf-16le': 'UTF-16LE', 'utf-16be': 'UTF-16BE', 'iso-8859-1': 'ISO-8859-1' }

/**
 * Reads a KML stream and, unless dryRun, replaces the served dataset with it in one transaction:
 * readers see the old dataset until the commit, and any failure leaves the old dataset in place.
 */
export async function importPlacemarks (handle: DatabaseHandle | null, chunks: AsyncIterable<string | Buffer>, options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now()
  const createdAt = new Date().toISOString()
  const summary: ImportSummary = {
    source: options.source,
    timeZone: options.timeZone,
    dryRun: Boolean(options.dryRun || !handle),
    placemarks: 0,
    geometryTypes: { Point: 0, LineString: 0, Polygon: 0 },
    styles: 0,
    styleKinds: { Style: 0, StyleMap: 0 },
    folders: 0,
    skipped: {},
    timelineEvents: 0,
    timestampedEvents: 0,
    encoding: null,
    invalidSequences: 0,
    firstInvalidLine: null,
    version: null,
    seconds: 0
  }
  const sink = handle && !options.dryRun ? await databaseSink(handle, summary, { ...SWAP_LOCK, ...options.swapLock }) : dryRunSink(summary)
  const skip = (reason: string) => { summary.skipped[reason] = (summary.skipped[reason] ?? 0) + 1 }
  const decoding: DecodeReport = { encoding: null, invalidSequences: 0, firstInvalidLine: null }
  try {
    for await (const batch of readKmlBatches(chunks, { limits: options.limits, report: decoding })) {
      for (const item of batch) {
        if (item.kind === 'placemark') {
          const row = toRow(summary.placemarks + 1, item.placemark, options.timeZone, createdAt)
          summary.placemarks++
          summary.geometryTypes[row[5]]++
          if (row[13]) summary.timelineEvents++
          if (row[12]) summary.timestampedEvents++
          // A promise only when the database pushes back.
          const pending = sink.placemark(row)
          if (pending) await pending
          if (summary.placemarks % 5000 === 0) options.onProgress?.(summary.placemarks)
        } else if (item.kind === 'style') {
          const pending = sink.style({ id: item.style.id, kind: item.style.kind, definition: JSON.stringify(item.style.definition) })
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
    summary.version = await sink.finish(summary)
  } catch (err) {
    await sink.abort()
    throw err
  }
  options.onProgress?.(summary.placemarks)
  summary.seconds = (performance.now() - started) / 1000
  return summary
}
