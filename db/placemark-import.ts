import type { PoolClient } from 'pg'
import type { DatabaseHandle } from './handle.ts'
import type { KmzIcon } from '../lib/kml/source.ts'
import type { DatasetFactsT } from '../lib/import/dataset-facts.ts'
import { bulkWriter } from './bulk.ts'
import { fillTileCells } from './tile-cells.ts'
import { COLUMNS, countDuplicates, countStyle, dryRunSink, emptySummary, runImport, type FolderRecord, type ImportOptions, type ImportSummary, type InferredTime, type Row, type Sink, type StyleRecord } from '../lib/import/placemarks.ts'

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

// Styles and folders are written in batches of about this many (or of BATCH_CHARS of JSON), so
// memory holds one batch of them whatever the file.
const STYLE_BATCH = 1000
const FOLDER_BATCH = 5000
const BATCH_CHARS = 4 * 1024 * 1024

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The placemarks table's columns: the staging table's without the spatial key, with those it derives.
const DERIVED = ['summary', 'min_lon', 'min_lat', 'max_lon', 'max_lat']
// Set on the staged rows once the whole file is read (the inferred AM/PM of names' times).
const AMENDED = ['event_time_inferred']
const PLACEMARK_COLUMNS = [...COLUMNS.filter((c) => c !== 'spatial_key'), ...AMENDED, ...DERIVED].join(', ')
// Inferred times per statement.
const AMEND_BATCH = 10_000
// The staging table derives the serialized summary (migration 015's placemark_summary) and the bounds'
// corners as generated columns: the database computes them while the file is still being read.
const STAGING_DERIVED = `
  DROP COLUMN ${DERIVED.join(', DROP COLUMN ')},
  ADD COLUMN spatial_key float8 NOT NULL,
  ADD COLUMN summary text GENERATED ALWAYS AS (placemark_summary(id, name, description, style_id, folder_path, geometry_type,
    geometry, coordinates_raw, media_links, created_at, time_begin, time_end)) STORED,
  ADD COLUMN min_lon float8 GENERATED ALWAYS AS ((bbox[1])[0]) STORED,
  ADD COLUMN min_lat float8 GENERATED ALWAYS AS ((bbox[1])[1]) STORED,
  ADD COLUMN max_lon float8 GENERATED ALWAYS AS ((bbox[0])[0]) STORED,
  ADD COLUMN max_lat float8 GENERATED ALWAYS AS ((bbox[0])[1]) STORED`

// The dataset loads into a staging table (COPY FREEZE on PostgreSQL: the table is created in the COPY's
// transaction; unlogged, as it is dropped before the swap), then goes into the shadow table in spatial
// order (a Hilbert curve over the bounds' centres, lib/geo/hilbert.ts), so that the rows of a small box
// sit on few pages; ids keep the document's order. The other indexes are built once at the end,
// statistics gathered, and the tables swap. Readers keep using the old table until then, and the swap
// holds its lock only until the commit.
//
// The import's own transaction (the main connection) takes the import lock, replaces the styles and
// folders and makes the swap. The heavy statements run on lanes:
// - one lane (PGlite, or a pool of fewer than LANE_POOL_MIN connections): the main connection itself,
//   inside that one transaction;
// - two lanes (PostgreSQL): two more connections, on which the staging and shadow tables are tables
//   of their own, committed as they are built, so that both cores work: the sorted insert is split in
//   two at the spatial key's median, and the trigram index is built beside the others (at 1M
//   placemarks the insert and the indexes took 32 s on one connection and 14 s on two). Nobody reads
//   them but the import (readers use placemarks, and the import lock keeps other imports out); a
//   failed import drops them before it lets go of the lock, and the next import drops any that a
//   crash left behind.
type Lanes = readonly [PoolClient] | readonly [PoolClient, PoolClient]

// Connections the pool must allow for two lanes: the main one and two more.
export const LANE_POOL_MIN = 3

async function beginImport (client: PoolClient): Promise<void> {
  await client.query('BEGIN')
  // One import at a time: a second one is refused at once rather than left to wait or deadlock.
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [IMPORT_LOCK_KEY])
  if (!rows[0].locked) throw new ImportBusyError('another import is running; try again when it has finished (nothing was imported)')
  await client.query('DELETE FROM styles')
  await client.query('DELETE FROM folders')
}

async function takeLanes (handle: DatabaseHandle, main: PoolClient): Promise<Lanes> {
  if (handle.kind !== 'postgres' || (handle.pool.options.max ?? 10) < LANE_POOL_MIN) return [main]
  const first = await handle.pool.connect()
  try {
    return [first, await handle.pool.connect()]
  } catch (err) {
    first.release()
    throw err
  }
}

// The import's own tables, as a crash or a failed import may have left them.
const DROP_IMPORT_TABLES = 'DROP TABLE IF EXISTS placemarks_staging, placemarks_next'

// The shadow table, and the staging table in a transaction of its own when on a lane (COPY FREEZE
// needs the table created in the COPY's transaction).
async function createTables (lane: PoolClient, own: boolean): Promise<void> {
  await lane.query(DROP_IMPORT_TABLES)
  await lane.query('CREATE TABLE placemarks_next (LIKE placemarks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
  if (own) await lane.query('BEGIN')
  await lane.query('CREATE UNLOGGED TABLE placemarks_staging (LIKE placemarks)')
  await lane.query(`ALTER TABLE placemarks_staging ${STAGING_DERIVED}`)
}

// Runs each task on its own lane at once, or one after the other on the one lane; waits for all of
// them (so no statement is left running) and throws the first failure.
async function onLanes (lanes: Lanes, tasks: ReadonlyArray<(lane: PoolClient) => Promise<void>>): Promise<void> {
  if (lanes.length === 1) {
    for (const task of tasks) await task(lanes[0])
    return
  }
  const results = await Promise.allSettled(tasks.map((task, i) => task(lanes[i])))
  for (const result of results) if (result.status === 'rejected') throw result.reason
}

/**
 * The staged rows into the shadow table in spatial order, its indexes built afterwards. On PostgreSQL the
 * sort gets 256 MB of the server's memory in all (128 MB on each of two lanes) rather than spilling 4 MB
 * runs to disk; PGlite's memory is the process's own, so it keeps the default there. On two lanes each
 * takes the rows on one side of the spatial key's median (from a 1 % sample of the table's pages, or
 * the whole table when the sample is empty): the two halves land on pages of their own, each in order.
 */
async function writeInSpatialOrder (lanes: Lanes, kind: DatabaseHandle['kind']): Promise<void> {
  const [first] = lanes
  const insert = (where: string) => `INSERT INTO placemarks_next (${PLACEMARK_COLUMNS}) SELECT ${PLACEMARK_COLUMNS} FROM placemarks_staging ${where} ORDER BY spatial_key, id`
  if (lanes.length === 1) {
    if (kind === 'postgres') await first.query("SET LOCAL work_mem = '256MB'")
    await first.query(insert(''))
    if (kind === 'postgres') await first.query('RESET work_mem')
  } else {
    // Two statements, not one: a statement that also planned the whole table's scan would be costly
    // enough for PostgreSQL to compile it (JIT, 0.7 s at 1M placemarks).
    const median = async (sample: string) => (await first.query<{ median: number | null }>(
      `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY spatial_key) AS median FROM placemarks_staging ${sample}`)).rows[0].median
    const split = (await median('TABLESAMPLE SYSTEM (1)')) ?? (await median(''))
    const half = (where: string) => async (lane: PoolClient) => {
      await lane.query('BEGIN')
      await lane.query("SET LOCAL work_mem = '128MB'")
      await lane.query(insert(where), [split])
      await lane.query('COMMIT')
    }
    // An empty staging table has no median: nothing to split.
    if (split !== null) await onLanes(lanes, [half('WHERE spatial_key < $1'), half('WHERE spatial_key >= $1')])
  }
  await first.query('DROP TABLE placemarks_staging')
}

/**
 * The shadow table's indexes and its statistics, in two groups of about the same length at 1M placemarks
 * (the trigram index 8–10 s; the GiST index 6 s and the rest 2 s), built side by side on two lanes.
 * Built after the insert rather than kept up during it: the two lanes' insert took 11 s with the GiST
 * index kept up and 5 s without it, and the build itself runs beside the trigram index's. The primary
 * key's index is built as a plain unique index and then made the key (ADD PRIMARY KEY itself would lock
 * the table against the other builds). Statistics come last, so that they cover the search index's
 * expression too.
 */
async function buildIndexes (lanes: Lanes): Promise<void> {
  await onLanes(lanes, [
    // The text search's trigram index (migration 012).
    async (lane) => { await lane.query("CREATE INDEX placemarks_next_search_idx ON placemarks_next USING gin ((name || ' ' || coalesce(description, '')) gin_trgm_ops)") },
    async (lane) => {
      await lane.query('CREATE INDEX placemarks_next_bbox_idx ON placemarks_next USING gist (bbox) INCLUDE (id)')
      await lane.query('CREATE UNIQUE INDEX placemarks_next_pkey ON placemarks_next (id)')
      await lane.query('CREATE INDEX placemarks_next_folder_path_idx ON placemarks_next USING gin (folder_path)')
      await lane.query('CREATE INDEX placemarks_next_timeline_idx ON placemarks_next (event_sort, id) WHERE event_sort IS NOT NULL')
    }
  ])
  const [first] = lanes
  await first.query('ALTER TABLE placemarks_next ADD CONSTRAINT placemarks_next_pkey PRIMARY KEY USING INDEX placemarks_next_pkey')
  // Statistics before the swap (they follow the table through the rename), not under its lock.
  await first.query('ANALYZE placemarks_next')
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

// The vector tiles' low zooms (db/tile-cells.ts) counted from the shadow table, in the import's transaction
// (replaced with the placemarks at the commit; readers keep the old rows until then). After the lanes' index
// builds, not beside them: the import's transaction holds its read lock on the shadow table from then on
// (until the commit, or until a failed import's undo rolls back to the savepoint before the count), and
// adding the table's primary key needs it to itself.
// On PostgreSQL the count's grouping gets 256 MB of the server's memory rather than spilling 4 MB runs to disk.
async function countTileCells (client: PoolClient, kind: DatabaseHandle['kind']): Promise<void> {
  if (kind === 'postgres') await client.query("SET LOCAL work_mem = '256MB'")
  await fillTileCells((text, values) => client.query(text, values), 'placemarks_next')
  if (kind === 'postgres') await client.query('RESET work_mem')
  await client.query('ANALYZE tile_cells, tile_shapes')
}

// The dataset's images, replaced in the import's transaction (bounded by the KMZ's icon limits).
async function replaceIcons (client: PoolClient, icons: KmzIcon[]): Promise<void> {
  await client.query('DELETE FROM dataset_icons')
  for (let i = 0; i < icons.length; i += 100) {
    const batch = icons.slice(i, i + 100).map((icon) => ({ name: icon.name, content_type: icon.type, data: icon.data.toString('base64') }))
    await client.query(`INSERT INTO dataset_icons (name, content_type, data)
      SELECT name, content_type, decode(data, 'base64') FROM json_to_recordset($1::json) AS i(name text, content_type text, data text)
      ON CONFLICT (name) DO NOTHING`, [JSON.stringify(batch)])
  }
}

async function swapIn (client: PoolClient, summary: ImportSummary, facts: DatasetFactsT, lock: SwapLockOptions): Promise<number> {
  await lockForSwap(client, lock)
  await client.query('DROP TABLE placemarks')
  await client.query('ALTER TABLE placemarks_next RENAME TO placemarks')
  await client.query('ALTER TABLE placemarks RENAME CONSTRAINT placemarks_next_pkey TO placemarks_pkey')
  for (const name of ['bbox', 'folder_path', 'timeline', 'search']) {
    await client.query(`ALTER INDEX placemarks_next_${name}_idx RENAME TO placemarks_${name}_idx`)
  }
  const { rows } = await client.query<{ version: string }>(
    `INSERT INTO dataset (id, version, source, timezone, imported_at, summary)
     VALUES (1, 1, $1, $2, now(), $3)
     ON CONFLICT (id) DO UPDATE SET version = dataset.version + 1, source = EXCLUDED.source,
       timezone = EXCLUDED.timezone, imported_at = EXCLUDED.imported_at, summary = EXCLUDED.summary
     RETURNING version`,
    [summary.source, summary.timeZone, JSON.stringify({ placemarks: summary.placemarks, skipped: summary.skipped, facts })]
  )
  const version = Number(rows[0].version)
  await client.query('COMMIT')
  return version
}

async function databaseSink (handle: DatabaseHandle, summary: ImportSummary, lock: SwapLockOptions, icons: KmzIcon[]): Promise<Sink> {
  const client = await handle.pool.connect()
  let lanes: Lanes = [client]
  let done = false
  // Back to the pool, each connection that failed closed instead.
  const release = (failures: Map<PoolClient, Error> = new Map()) => {
    if (done) return
    done = true
    for (const c of new Set([client, ...lanes])) c.release(failures.get(c))
  }
  // Whether the import's transaction has begun counting the tiles from the shadow table.
  let counting = false
  // Undoes a failed import: the lanes' transactions rolled back and their tables dropped while the
  // import lock is still held (on the first lane that can), then the import's transaction rolled back.
  const undo = async () => {
    if (done) return
    const failures = new Map<PoolClient, Error>()
    const attempt = async (c: PoolClient, sql: string) => {
      if (failures.has(c)) return false
      return c.query(sql).then(() => true, (err: Error) => { failures.set(c, err); return false })
    }
    if (lanes.length === 2) {
      for (const lane of lanes) await attempt(lane, 'ROLLBACK')
      // The tiles' count left the import's transaction holding a read lock on the shadow table, which the
      // drop would wait for: rolled back to before the count, it lets go of it and keeps the import lock.
      if (counting) await attempt(client, 'ROLLBACK TO SAVEPOINT tile_count')
      for (const lane of lanes) {
        if (await attempt(lane, DROP_IMPORT_TABLES)) break
      }
    }
    await attempt(client, 'ROLLBACK')
    release(failures)
  }
  try {
    await beginImport(client)
    lanes = await takeLanes(handle, client)
    await createTables(lanes[0], lanes.length === 2)
  } catch (err) {
    await undo()
    throw err
  }
  const copier = lanes[0]

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
    styleChars += s.id.length + JSON.stringify(s.definition).length + 32
    return styleFull()
  }
  const queueFolder = (f: FolderRecord) => {
    folders.push(f)
    folderChars += f.name.length + 32
    for (const name of f.path) folderChars += name.length + 4
    return folderFull()
  }

  // Placemarks stream into the staging table through the bulk writer (COPY FREEZE on PostgreSQL: the table
  // is the transaction's own). On one lane a connection runs one statement at a time, so a full batch of
  // styles or folders ends the placemarks' stream, goes in, and a new stream carries on; on two, styles
  // and folders go in on the main connection while the stream carries on.
  let inferred: InferredTime[] = []
  const startRows = () => bulkWriter(copier, handle.kind, 'placemarks_staging', COLUMNS, { freeze: true, json: ['extended_data', 'kml_time'] })
  let rows = startRows()
  const flushBatches = async () => {
    if (copier === client) await rows.close()
    await writeStyles()
    await writeFolders()
    if (copier === client) rows = startRows()
  }
  return {
    placemark: (row: Row) => rows.add(row),
    style: (s) => (queueStyle(s) ? flushBatches() : undefined),
    folder: (f) => (queueFolder(f) ? flushBatches() : undefined),
    inferredTimes: async (times) => { inferred = times },
    finish: async (summary, facts) => {
      await rows.close()
      // The times read with their neighbours' AM/PM, on the staged rows (the staging table's own connection).
      for (let i = 0; i < inferred.length; i += AMEND_BATCH) {
        await copier.query(
          `UPDATE placemarks_staging s SET event_timestamp = a.ts, event_sort = a.ts, event_time_inferred = true
           FROM json_to_recordset($1::json) AS a(id int, ts timestamptz) WHERE s.id = a.id`,
          [JSON.stringify(inferred.slice(i, i + AMEND_BATCH).map((e) => ({ id: e.id, ts: e.timestamp })))])
      }
      await writeStyles()
      await writeFolders()
      if (copier !== client) await copier.query('COMMIT')
      await writeInSpatialOrder(lanes, handle.kind)
      await buildIndexes(lanes)
      await client.query('SAVEPOINT tile_count')
      counting = true
      await countTileCells(client, handle.kind)
      await replaceIcons(client, icons)
      const version = await swapIn(client, summary, facts, lock)
      // Committed: VACUUM marks the served table's pages all-visible, so that the box query's index-only
      // scan (migration 020) reads only the rows it answers with (before the commit, the import's own
      // transaction, older than the rows, keeps it from marking them). About 1 s at 1M placemarks, 8 s
      // at 10M. The tiles' counted cells and shapes too: their previous version's rows are dead now, and
      // until vacuumed a low zoom's shapes are found among every one of them (at 10M, 470 ms instead of
      // 1). A failure leaves the import done, and on PostgreSQL the map to autovacuum; the connection is
      // closed rather than given back. The lanes go back to the pool first: the VACUUM needs one connection.
      for (const lane of lanes) if (lane !== client) lane.release()
      lanes = [client]
      const vacuumFailed = await client.query('VACUUM placemarks, tile_cells, tile_shapes').then(() => undefined, (err: Error) => err)
      release(vacuumFailed && new Map([[client, vacuumFailed]]))
      return version
    },
    abort: async () => {
      rows.abort()
      await undo()
    }
  }
}

/**
 * Reads a KML stream and, unless a dry run (or no database), replaces the served dataset with it in one
 * swap: readers see the old dataset until the import's transaction commits, and any failure leaves the
 * old dataset in place. The commit announces the new version on the change bus (the dataset table's trigger).
 */
export async function importPlacemarks (handle: DatabaseHandle | null, chunks: AsyncIterable<string | Buffer>, options: ImportOptions & { swapLock?: Partial<SwapLockOptions> }): Promise<ImportSummary> {
  const summary = emptySummary({ ...options, dryRun: Boolean(options.dryRun || !handle) })
  const sink = handle && !options.dryRun ? await databaseSink(handle, summary, { ...SWAP_LOCK, ...options.swapLock }, options.icons ?? []) : dryRunSink(summary)
  return runImport(chunks, sink, summary, options)
}
