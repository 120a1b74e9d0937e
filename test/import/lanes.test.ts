/**
 * On PostgreSQL an import builds the new table on two more connections (db/placemark-import.ts, its
 * lanes): the same dataset as on one, and a failure on either lane leaves the old dataset, no tables and
 * no lock behind.
 */
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { Readable } from 'node:stream'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { createPostgresDatabase, projectRoot, type Teardown } from '../helper.ts'
import { heldSource, waitUntil } from '../support/held-source.ts'
import { openDatabase, migrateToLatest, type DatabaseHandle } from '../../db/index.ts'
import { importPlacemarks, IMPORT_LOCK_KEY, LANE_POOL_MIN } from '../../db/placemark-import.ts'
import { generateKml } from '../../scripts/generate-kml.ts'

const small = readFileSync(join(projectRoot, 'test/fixtures/small.kml'), 'utf8')

async function database (t: Teardown, poolMax: number): Promise<{ url: string; handle: DatabaseHandle }> {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  return { url, handle }
}

async function client (t: Teardown, url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  t.teardown(() => c.end())
  return c
}

// Everything an import leaves, but the time it ran at (created_at, and the summary's copy of it).
async function contents (handle: DatabaseHandle) {
  const one = async (sql: string) => (await handle.pool.query(sql)).rows
  return {
    placemarks: await one(`SELECT count(*)::int AS n, md5(string_agg(md5(p::text), '' ORDER BY id)) AS hash FROM (
      SELECT id, name, description, style_id, folder_path, geometry_type, geometry, coordinates_raw, media_links, extended_data,
        bbox, event_date, event_timestamp, event_sort, time_begin, time_end, shape, min_lon, min_lat, max_lon, max_lat,
        regexp_replace(summary, '"created_at":"[^"]*"', '') AS summary,
        summary LIKE '%"created_at":"' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') || 'Z"%' AS stamped
      FROM placemarks) p`),
    folders: await one('SELECT * FROM folders ORDER BY id'),
    styles: await one('SELECT * FROM styles ORDER BY id'),
    indexes: await one("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'placemarks' ORDER BY indexname"),
    constraints: await one("SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'placemarks'::regclass ORDER BY conname"),
    leftovers: await one("SELECT to_regclass('placemarks_next') AS next, to_regclass('placemarks_staging') AS staging")
  }
}

t.test('two lanes and one give the same dataset, indexes and constraints', async (t) => {
  t.equal(LANE_POOL_MIN, 3, 'the main connection and two lanes')
  const dir = mkdtempSync(join(tmpdir(), 'import-lanes-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'generated.kml')
  await generateKml(file, 5000)
  const text = readFileSync(file, 'utf8')

  const one = await database(t, 2)
  const two = await database(t, 4)
  await importPlacemarks(one.handle, Readable.from([text]), { timeZone: 'UTC', source: 'generated.kml' })

  // Held half way, the two-lane import streams its rows on a connection other than the one holding the
  // import lock (its own transaction).
  const cut = text.indexOf('<Placemark', text.length >> 1)
  const held = heldSource(text.slice(0, cut), text.slice(cut))
  const importing = importPlacemarks(two.handle, held.chunks, { timeZone: 'UTC', source: 'generated.kml' })
  await held.waiting
  try {
    const observer = await client(t, two.url)
    // Locks of this database only: other tests' imports hold the same key in theirs.
    const { rows } = await observer.query<{ lock: number; copy: number }>(
      `SELECT (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS lock,
              (SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY placemarks_staging%') AS copy`, [IMPORT_LOCK_KEY])
    t.ok(rows[0].lock && rows[0].copy && rows[0].lock !== rows[0].copy, `the rows go in on a lane (${rows[0].copy}), not on the import's own connection (${rows[0].lock})`)
  } finally {
    held.release()
  }
  t.equal((await importing).placemarks, 5000)

  const a = await contents(one.handle)
  const b = await contents(two.handle)
  t.equal(a.placemarks[0].n, 5000)
  t.same(b, a, 'the same rows, folders, styles, indexes and constraints, and nothing left over')
  t.same(a.leftovers, [{ next: null, staging: null }])
  const stamped = await two.handle.pool.query("SELECT count(*)::int AS n FROM placemarks WHERE summary NOT LIKE '%\"created_at\":\"' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS') || 'Z\"%'")
  t.equal(stamped.rows[0].n, 0, 'each summary carries its row\'s created_at')
})

t.test('a lane that fails leaves the old dataset, no tables and no lock behind', async (t) => {
  const { url, handle } = await database(t, 4)
  t.equal((await importPlacemarks(handle, Readable.from([small]), { timeZone: 'UTC', source: 'small.kml' })).version, 1)

  const cut = small.indexOf('<Folder>')
  const held = heldSource(small.slice(0, cut), small.slice(cut))
  const importing = importPlacemarks(handle, held.chunks, { timeZone: 'UTC', source: 'second.kml' })
  const failed = importing.then(() => null, (err: Error) => err)
  await held.waiting
  // The shadow table is already there (committed); a lock on it stops both lanes at their insert.
  const locker = await client(t, url)
  const observer = await client(t, url)
  await locker.query('BEGIN')
  await locker.query('LOCK TABLE placemarks_next IN SHARE MODE')
  held.release()
  const waiting = async () => (await observer.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE relation = to_regclass('placemarks_next') AND NOT granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY pid`)).rows
  await waitUntil(async () => (await waiting()).length === 2)
  const [victim] = await waiting()
  await observer.query('SELECT pg_terminate_backend($1)', [victim.pid])
  await locker.query('ROLLBACK')

  const err = await failed
  t.match(err, { message: /terminating connection/ }, 'the import fails with the lane\'s error')
  const after = await contents(handle)
  t.same(after.leftovers, [{ next: null, staging: null }], 'the shadow and staging tables are dropped')
  const { rows } = await handle.pool.query('SELECT version, source FROM dataset')
  t.same(rows, [{ version: 1, source: 'small.kml' }], 'the old dataset stays')
  t.equal(after.placemarks[0].n, 7)
  t.equal((await importPlacemarks(handle, Readable.from([small]), { timeZone: 'UTC', source: 'third.kml' })).version, 2, 'the lock is free: the next import goes in')
})
