/**
 * kill -9 in the middle of a write, on PostgreSQL: nothing is half-applied. An import killed while it
 * loads, or while it waits to swap, leaves the old dataset whole (and the next import goes through); a
 * server killed while clients rotate their refresh tokens leaves each token rotated with its successor
 * stored, or not rotated at all, and every client goes on after the restart.
 */
import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildTestApp, createPostgresDatabase, freePort, projectRoot, testSecrets, typescriptLoader } from '../helper.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/index.ts'
import { importPlacemarks, IMPORT_LOCK_KEY } from '../../db/placemark-import.ts'
import { generateKml } from '../../scripts/generate-kml.ts'
import { hashTokenId } from '../../lib/auth/tokens.ts'
import { until } from '../support/shared-state.ts'
import { runScript, startServer } from '../support/run.ts'
import { StandInIdp } from '../support/idp-server.ts'

// Real servers and commands started several times over: a busy machine stretches that.
t.setTimeout(300_000)

const NEXT_COUNT = 20_000

// Everything a dataset is made of, as one comparable value.
async function dataset (handle: DatabaseHandle) {
  const one = async (text: string) => (await handle.pool.query(text)).rows
  return {
    version: await one('SELECT version::int AS version, source FROM dataset'),
    placemarks: await one("SELECT count(*)::int AS n, md5(coalesce(string_agg(id || name || geometry || coalesce(summary, ''), '' ORDER BY id), '')) AS hash FROM placemarks"),
    styles: await one('SELECT * FROM styles ORDER BY id'),
    folders: await one('SELECT * FROM folders ORDER BY id')
  }
}

t.test('kill -9 during a CLI import: the old dataset stays whole, the next import goes through', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kill-import-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'next.kml')
  await generateKml(file, NEXT_COUNT)
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 5 })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'test/fixtures/small.kml')), { timeZone: 'UTC', source: 'small.kml' })
  const before = await dataset(handle)
  const oldCount = before.placemarks[0].n as number
  t.ok(oldCount > 0, `the old dataset: ${oldCount} placemarks`)

  const activity = async (pattern: string, waiting = false) => (await handle.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ~* $1${waiting ? " AND wait_event_type = 'Lock'" : " AND state = 'active'"}`, [pattern])).rows[0]!.n
  // The import's own connection is gone once its transaction's lock on imports is free.
  const importGone = async () => {
    const { rows } = await handle.pool.query<{ free: boolean }>('SELECT pg_try_advisory_lock($1) AS free', [IMPORT_LOCK_KEY])
    if (rows[0]!.free) await handle.pool.query('SELECT pg_advisory_unlock($1)', [IMPORT_LOCK_KEY])
    return rows[0]!.free
  }

  /** `npm run import` of the next file as its own process, killed with SIGKILL once `reached` holds. */
  async function killedImport (t: Test, reached: () => Promise<boolean>) {
    const child = spawn(process.execPath, ['--import', typescriptLoader, join(projectRoot, 'scripts/import.ts'), file, '--timezone', 'UTC'],
      { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    const exited = once(child, 'exit')
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    const at = await until(async () => child.exitCode !== null || await reached(), 60_000)
    t.ok(at >= 0 && child.exitCode === null, 'the import reached the point', { output })
    child.kill('SIGKILL')
    const [, signal] = await exited
    t.equal(signal, 'SIGKILL')
  }

  async function nothingHalfApplied (t: Test) {
    t.ok(await until(importGone, 30_000) >= 0, 'the killed import\'s transaction is over')
    t.same(await dataset(handle), before, 'the old dataset, whole: placemarks, styles, folders and version')
    // A server started now serves it.
    const app = await buildTestApp(t, handle)
    const stats = (await app.inject('/api/v1/stats')).json()
    t.equal(stats.total_placemarks, oldCount)
  }

  t.test('killed while the placemarks load', async (t) => {
    await killedImport(t, async () => await activity('^COPY placemarks_staging') > 0)
    await nothingHalfApplied(t)
  })

  t.test('killed while it waits to swap the tables', async (t) => {
    // A reader's transaction holds the table: the import waits for it with everything else done.
    const reader = new pg.Client({ connectionString: url })
    await reader.connect()
    t.teardown(() => reader.end())
    await reader.query('BEGIN')
    await reader.query('SELECT count(*) FROM placemarks')
    await killedImport(t, async () => await activity('^LOCK TABLE placemarks IN ACCESS EXCLUSIVE MODE', true) > 0)
    await reader.query('COMMIT')
    await nothingHalfApplied(t)
  })

  t.test('the next import goes through, and leaves nothing of the killed ones', async (t) => {
    const run = await runScript('scripts/import.ts', [file, '--timezone', 'UTC'], { DATABASE_URL: url })
    t.equal(run.code, 0, run.stderr)
    const after = await dataset(handle)
    t.same(after.version, [{ version: 2, source: 'next.kml' }], 'the next version, one after the old one')
    t.equal(after.placemarks[0].n, NEXT_COUNT)
    const { rows } = await handle.pool.query("SELECT to_regclass('placemarks_next') AS next, to_regclass('placemarks_staging') AS staging")
    t.same(rows, [{ next: null, staging: null }], 'no table of the killed imports left')
  })
})

t.test('kill -9 while clients rotate refresh tokens: each token rotated with its successor, or not at all; every client goes on', async (t) => {
  const CLIENTS = 12
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 2 })
  t.teardown(() => handle.close())
  const query = async <R extends object>(text: string, values: unknown[] = []) => (await handle.pool.query<R>(text, values)).rows

  /** server.ts on the test's database, as `npm start` runs it, and how to refresh a token there. */
  async function server () {
    const port = await freePort()
    const started = await startServer(t, {
      ...testSecrets,
      ...idp.env(),
      DATABASE_URL: url,
      HOST: '127.0.0.1',
      PORT: String(port),
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      RATE_LIMIT_MAX: '100000',
      AUTH_RATE_LIMIT_MAX: '100000',
      // A connection for each client's rotation, even with all of them held up at once.
      DB_POOL_MAX: String(CLIENTS + 2),
      // Long enough to cover a restart: a client whose answer was lost presents the token it still has.
      REFRESH_REUSE_GRACE: '5m'
    }, /serving on/)
    started.child.stdout!.resume()
    const base = `http://127.0.0.1:${port}`
    const refresh = async (token: string) => {
      const res = await fetch(`${base}/api/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: token }) })
      return { status: res.status, token: res.status === 200 ? ((await res.json()) as { refreshToken: string }).refreshToken : null }
    }
    const state = { killed: false }
    const kill = async () => {
      state.killed = true
      started.child.kill('SIGKILL')
      await once(started.child, 'exit')
    }
    return { base, refresh, kill, state }
  }

  // Each client: the token it holds for sure, and the one it sent without an answer, if any.
  interface Client { held: string; sent: string | null }
  let current = await server()
  const clients: Client[] = []
  for (let i = 0; i < CLIENTS; i++) {
    idp.user = { id: `30000000000000${String(i).padStart(4, '0')}`, username: `client${i}`, discriminator: '0', avatar: null }
    const signIn = await fetch(`${current.base}/api/auth/identity?code=ok`)
    t.equal(signIn.status, 200)
    clients.push({ held: ((await signIn.json()) as { refreshToken: string }).refreshToken, sent: null })
  }

  const tokenHash = (token: string) => hashTokenId((JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { tokenId: string }).tokenId)
  const rotated = async (token: string) => (await query<{ rotated: boolean }>('SELECT rotated_at IS NOT NULL AS rotated FROM refresh_tokens WHERE token_hash = $1', [tokenHash(token)]))[0]!.rotated
  let answered = 0
  // One rotation of each client's token after another, until the server dies under them.
  const rotating = (app: typeof current) => clients.map(async (client) => {
    for (;;) {
      client.sent = client.held
      let next: string | null
      try {
        next = (await app.refresh(client.sent)).token
      } catch (err) {
        // The server is gone: this request's answer never came.
        if (app.state.killed) return
        throw err
      }
      if (next === null) throw new Error('a refresh was refused')
      client.held = next
      client.sent = null
      answered++
    }
  })

  // A killed server's connections are gone once PostgreSQL has ended what they were doing.
  const transactionsOver = async (t: Test) => t.ok(await until(async () => (await query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'"))[0]!.n === 0, 30_000) >= 0,
  'the killed server\'s transactions are over')

  /** No rotation stopped half way: each session has one token not yet rotated, every rotation is recorded once. */
  async function wholeRotations (t: Test) {
    const rows = await query<{ live: number; rotated: number; revoked: boolean }>(`
      SELECT count(*) FILTER (WHERE r.rotated_at IS NULL)::int AS live, count(*) FILTER (WHERE r.rotated_at IS NOT NULL)::int AS rotated,
        s.revoked_at IS NOT NULL AS revoked
      FROM sessions s JOIN refresh_tokens r ON r.session_id = s.id GROUP BY s.id, s.revoked_at`)
    t.equal(rows.length, CLIENTS, 'a session per client')
    t.ok(rows.every((r) => r.live === 1 && !r.revoked), 'each session: exactly one token not yet rotated, none revoked')
    // The requests the kill cut whose rotation had committed: their answer was lost on the way.
    const committed = (await Promise.all(clients.filter((c) => c.sent !== null).map((c) => rotated(c.sent!)))).filter(Boolean).length
    t.equal(rows.reduce((n, r) => n + r.rotated, 0), answered + committed, `every rotation recorded once: ${answered} answered, ${committed} cut after their commit`)
    return committed
  }

  /** Restarted, the server lets every client go on: with its new token, or with the one it sent whose answer never came. */
  async function everyClientGoesOn (t: Test) {
    current = await server()
    for (const client of clients) {
      // Rotated already (its answer was lost): a repeat within REFRESH_REUSE_GRACE, not a reuse.
      const first = await current.refresh(client.sent ?? client.held)
      t.equal(first.status, 200, `a client ${client.sent === null ? 'with its new token' : 'whose answer was cut'} goes on`)
      const second = await current.refresh(first.token!)
      t.equal(second.status, 200, 'and keeps going')
      client.held = second.token!
      client.sent = null
      answered += 2
    }
    t.same(await query('SELECT count(*)::int AS n FROM sessions WHERE revoked_at IS NOT NULL'), [{ n: 0 }], 'no session taken for a stolen one')
  }

  t.test('killed at any moment under load', async (t) => {
    const loops = rotating(current)
    t.ok(await until(async () => answered >= 10 * CLIENTS, 60_000) >= 0, 'the clients are rotating')
    await current.kill()
    await Promise.all(loops)
    await transactionsOver(t)
    t.ok(clients.some((c) => c.sent !== null), `${clients.filter((c) => c.sent !== null).length} requests cut by the kill after ${answered} rotations`)
    await wholeRotations(t)
    await everyClientGoesOn(t)
  })

  t.test('killed with every rotation written and not yet committed', async (t) => {
    // Held in SHARE mode, the sessions table lets each rotation lock its rows and write the token's rotation
    // and its successor, and stops it at its last write, the session's expiry, before the commit.
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    t.teardown(() => holder.end())
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE sessions IN SHARE MODE')
    const loops = rotating(current)
    const waiting = async () => (await query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ~* '^update \"sessions\"'"))[0]!.n
    t.ok(await until(async () => await waiting() === CLIENTS, 30_000) >= 0, `all ${CLIENTS} rotations wait at their last write`)
    const stopped = await query<{ n: number }>('SELECT count(*)::int AS n FROM refresh_tokens WHERE rotated_at IS NOT NULL')
    await current.kill()
    await holder.query('COMMIT')
    await Promise.all(loops)
    await transactionsOver(t)
    t.ok(clients.every((c) => c.sent !== null), 'every client\'s request was cut')
    t.same(await query('SELECT count(*)::int AS n FROM refresh_tokens WHERE rotated_at IS NOT NULL'), stopped, 'none of them rotated')
    t.equal(await wholeRotations(t), 0, 'no successor stored')
    await everyClientGoesOn(t)
  })
})
