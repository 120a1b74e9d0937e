import type { PoolClient } from 'pg'
import type { DatabaseHandle } from './handle.ts'
import { bulkWriter } from './bulk.ts'
import { COLUMNS, countDuplicates, countStyle, dryRunSink, emptySummary, runImport, type FolderRecord, type ImportOptions, type ImportSummary, type Row, type Sink, type StyleRecord } from '../lib/import/placemarks.ts'

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
const PLACEMARK_COLUMNS = [...COLUMNS.filter((c) => c !== 'spatial_key'), ...DERIVED].join(', ')
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

// The dataset loads into a staging table (COPY FREEZE on PostgreSQL: created in this transaction;
// unlogged, as it is dropped before the commit), then goes into the shadow table in spatial order (a
// Hilbert curve over the bounds' centres, lib/geo/hilbert.ts), so that the rows of a small box sit on
// few pages; ids keep the document's order. The other indexes are built once at the end, statistics
// gathered, and the tables swap. Readers keep using the old table until then, and the swap holds its
// lock only until the commit.
async function beginShadowImport (client: PoolClient): Promise<void> {
  await client.query('BEGIN')
  // One import at a time: a second one is refused at once rather than left to wait or deadlock.
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [IMPORT_LOCK_KEY])
  if (!rows[0].locked) throw new ImportBusyError('another import is running; try again when it has finished (nothing was imported)')
  await client.query('DROP TABLE IF EXISTS placemarks_next')
  await client.query('DROP TABLE IF EXISTS placemarks_staging')
  await client.query('CREATE TABLE placemarks_next (LIKE placemarks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)')
  await client.query('CREATE UNLOGGED TABLE placemarks_staging (LIKE placemarks)')
  await client.query(`ALTER TABLE placemarks_staging ${STAGING_DERIVED}`)
  await client.query('DELETE FROM styles')
  await client.query('DELETE FROM folders')
}

/**
 * The staged rows into the shadow table in spatial order. The GiST index is kept up as they go: rows
 * arriving in spatial order land in the same parts of the tree, and at 1M placemarks this took about
 * as long as the insert and a build after it together (15 s against 8 + 9 s). On PostgreSQL the sort
 * gets 256 MB (the server's memory, for this statement) rather than spilling 4 MB runs to disk;
 * PGlite's memory is the process's own, so it keeps the default there.
 */
async function writeInSpatialOrder (client: PoolClient, kind: DatabaseHandle['kind']): Promise<void> {
  if (kind === 'postgres') await client.query("SET LOCAL work_mem = '256MB'")
  await client.query('CREATE INDEX placemarks_next_bbox_idx ON placemarks_next USING gist (bbox) INCLUDE (id)')
  await client.query(`INSERT INTO placemarks_next (${PLACEMARK_COLUMNS}) SELECT ${PLACEMARK_COLUMNS} FROM placemarks_staging ORDER BY spatial_key, id`)
  await client.query('DROP TABLE placemarks_staging')
  if (kind === 'postgres') await client.query('RESET work_mem')
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

async function commitShadowImport (client: PoolClient, kind: DatabaseHandle['kind'], summary: ImportSummary, lock: SwapLockOptions): Promise<number> {
  await writeInSpatialOrder(client, kind)
  await client.query('ALTER TABLE placemarks_next ADD CONSTRAINT placemarks_next_pkey PRIMARY KEY (id)')
  await client.query('CREATE INDEX placemarks_next_folder_path_idx ON placemarks_next USING gin (folder_path)')
  await client.query('CREATE INDEX placemarks_next_timeline_idx ON placemarks_next (event_sort, id) WHERE event_sort IS NOT NULL')
  // The text search's trigram index (migration 012).
  await client.query("CREATE INDEX placemarks_next_search_idx ON placemarks_next USING gin ((name || ' ' || coalesce(description, '')) gin_trgm_ops)")
  // Statistics before the swap (they follow the table through the rename), not under its lock.
  await client.query('ANALYZE placemarks_next')
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
    [summary.source, summary.timeZone, JSON.stringify({ placemarks: summary.placemarks, skipped: summary.skipped })]
  )
  const version = Number(rows[0].version)
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
    styleChars += s.id.length + JSON.stringify(s.definition).length + 32
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

  // Placemarks stream into the staging table through the bulk writer (COPY FREEZE on PostgreSQL: the table
  // is this transaction's own). A connection runs one statement at a time, so a full batch of styles or
  // folders ends the placemarks' stream, goes in, and a new stream carries on.
  const startRows = () => bulkWriter(client, handle.kind, 'placemarks_staging', COLUMNS, { freeze: true, json: ['extended_data'] })
  let rows = startRows()
  const flushBatches = async () => {
    await rows.close()
    await writeStyles()
    await writeFolders()
    rows = startRows()
  }
  return {
    placemark: (row: Row) => rows.add(row),
    style: (s) => (queueStyle(s) ? flushBatches() : undefined),
    folder: (f) => (queueFolder(f) ? flushBatches() : undefined),
    finish: async (summary) => {
      await rows.close()
      await writeStyles()
      await writeFolders()
      const version = await commitShadowImport(client, handle.kind, summary, lock)
      release()
      return version
    },
    abort: async () => {
      rows.abort()
      await rollback()
    }
  }
}

/**
 * Reads a KML stream and, unless a dry run (or no database), replaces the served dataset with it in one
 * transaction: readers see the old dataset until the commit, and any failure leaves the old dataset in
 * place. The commit announces the new version on the change bus (the dataset table's trigger).
 */
export async function importPlacemarks (handle: DatabaseHandle | null, chunks: AsyncIterable<string | Buffer>, options: ImportOptions & { swapLock?: Partial<SwapLockOptions> }): Promise<ImportSummary> {
  const summary = emptySummary({ ...options, dryRun: Boolean(options.dryRun || !handle) })
  const sink = handle && !options.dryRun ? await databaseSink(handle, summary, { ...SWAP_LOCK, ...options.swapLock }) : dryRunSink(summary)
  return runImport(chunks, sink, summary, options)
}
