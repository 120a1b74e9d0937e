import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { createPostgresDatabase, openTestDatabase, projectRoot } from '../helper.ts'
import { heldSource, waitUntil } from '../support/held-source.ts'
import { runScript } from '../support/run.ts'
import { openDatabase, migrateToLatest, type DatabaseHandle } from '../../db/index.ts'
import { importPlacemarks, IMPORT_LOCK_KEY, SWAP_LOCK } from '../../db/placemark-import.ts'

const small = readFileSync(join(projectRoot, 'test/fixtures/small.kml'), 'utf8')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function * once (text: string): AsyncGenerator<string> {
  yield text
}

const run = (handle: DatabaseHandle, options: Partial<Parameters<typeof importPlacemarks>[2]> = {}, text = small) =>
  importPlacemarks(handle, once(text), { timeZone: 'UTC', source: 'small.kml', ...options })

async function client (url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  return c
}

// Whether some session waits for a lock on the placemarks table.
async function importWaiting (observer: pg.Client): Promise<boolean> {
  const { rows } = await observer.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'placemarks'::regclass AND NOT granted AND mode = 'AccessExclusiveLock'")
  return rows[0].n > 0
}

t.test('a long reader delays the swap without stalling the readers behind it', async (t) => {
  t.same(SWAP_LOCK, { timeoutMs: 2000, attempts: 8, firstBackoffMs: 250, maxBackoffMs: 4000 })
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax: 4 })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  t.equal((await run(handle)).version, 1)

  const longReader = await client(url)
  const otherReader = await client(url)
  const observer = await client(url)
  t.teardown(async () => { await longReader.end(); await otherReader.end(); await observer.end() })
  // Without the import's lock timeout, a reader queued behind it would wait for the long reader.
  await otherReader.query("SET statement_timeout = '8s'")

  await longReader.query('BEGIN')
  await longReader.query('SELECT count(*) FROM placemarks')
  const started = Date.now()
  const importing = run(handle)
  await waitUntil(() => importWaiting(observer))

  // Readers that come while the import waits are answered within about the lock timeout.
  const waits: number[] = []
  while (Date.now() - started < 5000) {
    const before = Date.now()
    const { rows } = await otherReader.query<{ n: number }>('SELECT count(*)::int AS n FROM placemarks')
    waits.push(Date.now() - before)
    t.equal(rows[0].n, 7)
    await sleep(100)
  }
  const longest = Math.max(...waits)
  t.ok(longest < SWAP_LOCK.timeoutMs + 700, `${waits.length} reads, the longest ${longest} ms`)
  t.ok(waits.some((w) => w > 200), 'some read did queue behind the waiting import')

  await longReader.query('COMMIT')
  const summary = await importing
  t.equal(summary.version, 2, 'the import completes once the long reader ends')
  t.ok(Date.now() - started >= 5000, 'it waited for the reader')
})

t.test('the import gives up clearly when a reader outlasts every attempt', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax: 4 })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  await run(handle)
  const longReader = await client(url)
  t.teardown(() => longReader.end())
  await longReader.query('BEGIN')
  await longReader.query('SELECT count(*) FROM placemarks')
  const started = Date.now()
  await t.rejects(run(handle, { swapLock: { timeoutMs: 200, attempts: 3, firstBackoffMs: 50 } }),
    { name: 'SwapLockError', message: 'the placemarks table stayed in use by other transactions (3 attempts, waiting 200 ms each); nothing was imported' })
  const took = Date.now() - started
  t.ok(took >= 3 * 200 + 50 + 100 && took < 5000, `gave up after ${took} ms`)
  await longReader.query('COMMIT')
  const { rows } = await handle.pool.query('SELECT version FROM dataset')
  t.equal(Number(rows[0].version), 1, 'the old dataset stays')
  t.equal((await run(handle)).version, 2, 'and the next import goes through')
})

t.test('two imports at once: one goes in, the other is refused clearly', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax: 4 })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  const cut = small.indexOf('<Folder>')
  const held = heldSource(small.slice(0, cut), small.slice(cut))
  const first = importPlacemarks(handle, held.chunks, { timeZone: 'UTC', source: 'first.kml' })
  await held.waiting
  await t.rejects(run(handle, { source: 'second.kml' }), { name: 'ImportBusyError', message: 'another import is running; try again when it has finished (nothing was imported)' })
  held.release()
  t.equal((await first).version, 1)
  t.equal((await run(handle)).version, 2, 'once the first has finished, the next one goes in')

  // Both started together: whichever takes the lock first wins, the other is refused (no deadlock).
  const results = await Promise.allSettled([run(handle), run(handle)])
  const fulfilled = results.filter((r) => r.status === 'fulfilled')
  const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []))
  t.ok(fulfilled.length >= 1, 'at least one imports')
  for (const err of rejected) t.match(err.message, /^another import is running/)

  // Through the CLI: one line on stderr while another holds the import lock.
  const holder = await client(url)
  t.teardown(() => holder.end())
  await holder.query('SELECT pg_advisory_lock($1)', [IMPORT_LOCK_KEY])
  const refused = await runScript('scripts/import.ts', ['test/fixtures/small.kml'], { DATABASE_URL: url })
  t.equal(refused.code, 1)
  t.equal(refused.stderr.trim(), 'error: another import is running; try again when it has finished (nothing was imported)')
  await holder.query('SELECT pg_advisory_unlock($1)', [IMPORT_LOCK_KEY])
})

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`${kind}: styles and folders go to the database in batches`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const folders = 12_000
    const styles = 2500
    const parts = ['<kml><Document>\n']
    for (let i = 0; i < styles; i++) parts.push(`<Style id="s${i % 2000}"><IconStyle><scale>${i}</scale></IconStyle></Style>\n`)
    for (let i = 0; i < folders; i++) parts.push(`<Folder><name>f${i}</name><Placemark><name>p${i}</name><styleUrl>#s${i % 2000}</styleUrl><Point><coordinates>1,1</coordinates></Point></Placemark></Folder>\n`)
    const cut = parts.length
    parts.push('<StyleMap id="late"><Pair><key>normal</key><styleUrl>#s1</styleUrl></Pair></StyleMap>\n<Style id="s7"><IconStyle><scale>9</scale></IconStyle></Style>\n</Document></kml>')
    const held = heldSource(parts.slice(0, cut).join(''), parts.slice(cut).join(''))
    const importing = importPlacemarks(handle, held.chunks, { timeZone: 'UTC', source: 'wide.kml' })
    await held.waiting
    if (kind === 'postgres') {
      // Rows written but not committed already take room in the tables' files.
      const { rows } = await handle.pool.query<{ styles: string; folders: string }>("SELECT pg_relation_size('styles') AS styles, pg_relation_size('folders') AS folders")
      t.ok(Number(rows[0].styles) > 0, `styles written before the end: ${rows[0].styles} bytes`)
      t.ok(Number(rows[0].folders) > 100_000, `folders written before the end: ${rows[0].folders} bytes`)
    }
    held.release()
    const summary = await importing
    t.equal(summary.placemarks, folders)
    t.equal(summary.folders, folders)
    t.equal(summary.styles, 2001, '2000 distinct ids and the StyleMap')
    t.same(summary.styleKinds, { Style: 2000, StyleMap: 1 })
    t.same(summary.skipped, { 'duplicate style id': 501 })
    const count = async (sql: string) => Number((await handle.pool.query(sql)).rows[0].n)
    t.equal(await count('SELECT count(*) AS n FROM folders'), folders)
    t.equal(await count('SELECT count(*) AS n FROM styles'), 2001)
    t.equal(await count('SELECT count(*) AS n FROM folders WHERE path = ARRAY[name] AND id = substr(name, 2)::int + 1'), folders, 'ids follow document order')
    const first = await handle.pool.query("SELECT definition FROM styles WHERE id = 's7'")
    t.match(JSON.stringify(first.rows[0].definition), /"IconStyle.scale\\?":\\?"7\\?"/, 'the first of a repeated id is kept')
    const dry = await importPlacemarks(handle, once(parts.join('')), { timeZone: 'UTC', source: 'wide.kml', dryRun: true })
    t.same([dry.styles, dry.skipped], [2001, { 'duplicate style id': 501 }], 'a dry run counts the same')
  })
}
