import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../lib/config.ts'
import pg from 'pg'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp, createPostgresDatabase, projectRoot } from '../helper.ts'
import { migrateToLatest, openDatabase, type DatabaseOptions } from '../../db/index.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { TcpProxy } from '../support/tcp-proxy.ts'

// A database with the small fixture, reached through a proxy the test can cut; the app on a handle to it.
async function proxiedApp (t: Test, options: Omit<DatabaseOptions, 'url'>, overrides: Partial<Config> = {}) {
  const url = await createPostgresDatabase(t)
  const seed = await openDatabase({ url })
  await migrateToLatest(seed.db)
  await importPlacemarks(seed, createReadStream(join(projectRoot, 'test/fixtures/small.kml')), { timeZone: 'UTC', source: 'small.kml' })
  await seed.close()
  const proxy = new TcpProxy(5432)
  await proxy.start()
  t.teardown(() => proxy.stop())
  const proxied = new URL(url)
  proxied.port = String(proxy.port)
  const handle = await openDatabase({ url: proxied.toString(), ...options })
  t.teardown(() => handle.close())
  const app = await buildTestApp(t, handle, overrides)
  return { url, proxy, app }
}

// Polls path until it answers 200; whether it did within about five seconds.
async function recovers (app: FastifyInstance, path: string): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if ((await app.inject(path)).statusCode === 200) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

t.test('database outages answer 503 fast and the server recovers by itself', async (t) => {
  const { url, proxy, app } = await proxiedApp(t, { poolMax: 4, connectionTimeoutMillis: 500, statementTimeoutMillis: 2000 })

  t.equal((await app.inject('/api/v1/placemarks/1')).statusCode, 200)
  t.equal((await app.inject('/api/v1/stats')).statusCode, 200)

  // Every server connection of the database killed: the pool replaces them on the next query.
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')
  await admin.end()
  const codes: number[] = []
  for (let i = 0; i < 20 && codes[codes.length - 1] !== 200; i++) {
    codes.push((await app.inject('/api/v1/placemarks/2')).statusCode)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.equal(codes[codes.length - 1], 200, `recovers after killed connections (answers: ${codes.join(', ')})`)
  t.ok(codes.every((c) => c === 200 || c === 503), 'a dropped connection is a 503, never a 500')

  await proxy.stop()
  const started = Date.now()
  const down = await app.inject('/api/v1/placemarks/4')
  t.equal(down.statusCode, 503)
  t.same(down.json(), { error: 'Service Unavailable', message: 'The database is unavailable; try again shortly' })
  t.ok(Date.now() - started < 3000, 'fails fast instead of hanging')
  const health = await app.inject('/health')
  t.equal(health.statusCode, 503)
  t.match(health.json(), { status: 'unavailable', box_index: String })
  t.equal((await app.inject('/api/v1/stats')).statusCode, 200, 'cached answers keep being served')

  await proxy.start()
  t.ok(await recovers(app, '/health'), 'health recovers when the database is back')
  t.equal((await app.inject('/api/v1/placemarks/5')).statusCode, 200)
})

t.test('a network that drops packets silently: requests and /health answer 503 in bounded time, then recover', async (t) => {
  const { proxy, app } = await proxiedApp(t, { poolMax: 4, connectionTimeoutMillis: 800, statementTimeoutMillis: 1000, queryTimeoutMillis: 1500 }, { DB_CONNECTION_TIMEOUT_MS: 800 })
  t.equal((await app.inject('/api/v1/placemarks/1')).statusCode, 200)

  proxy.blackhole()
  for (const [path, bound] of [['/api/v1/placemarks/2', 3000], ['/health', 2000]] as const) {
    const started = Date.now()
    const res = await app.inject(path)
    const took = Date.now() - started
    t.equal(res.statusCode, 503, `${path}: 503`)
    t.ok(took < bound, `${path}: answered in ${took} ms, under ${bound} ms`)
  }
  t.same((await app.inject('/api/v1/placemarks/3')).json(), { error: 'Service Unavailable', message: 'The database is unavailable; try again shortly' })

  proxy.restore()
  t.ok(await recovers(app, '/api/v1/placemarks/4'), 'answers again once the network is back')
  t.equal((await app.inject('/health')).statusCode, 200)
})

t.test('PostgreSQL refusing the database (dropped, not accepting connections) is a 503', async (t) => {
  const url = await createPostgresDatabase(t)
  const seed = await openDatabase({ url })
  await migrateToLatest(seed.db)
  await seed.close()
  const handle = await openDatabase({ url, poolMax: 2, connectionTimeoutMillis: 1000 })
  t.teardown(() => handle.close())
  const app = await buildTestApp(t, handle)
  t.equal((await app.inject('/api/v1/stats')).statusCode, 200)
  const name = new URL(url).pathname.slice(1)
  const admin = new pg.Client({ connectionString: url.replace(`/${name}`, '/postgres') })
  await admin.connect()
  t.teardown(() => admin.end())
  const endSessions = (database: string) => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database])
  // 55000: the database is not accepting connections.
  await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`)
  await endSessions(name)
  const refused = await app.inject('/api/v1/placemarks/1')
  t.equal(refused.statusCode, 503, 'not accepting connections: 503')
  t.equal((await app.inject('/health')).statusCode, 503)
  await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`)
  // A database is renamed only with no session on it, and the app's listener reconnects as soon as it
  // may: its sessions are ended until the rename goes through.
  const rename = async (from: string, to: string) => {
    for (let attempt = 1; ; attempt++) {
      await endSessions(from)
      try {
        await admin.query(`ALTER DATABASE ${from} RENAME TO ${to}`)
        return
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err
        await sleep(20)
      }
    }
  }
  // 3D000: the database no longer exists.
  await rename(name, `${name}_moved`)
  t.equal((await app.inject('/api/v1/placemarks/1')).statusCode, 503, 'database missing: 503')
  await rename(`${name}_moved`, name)
  t.ok(await recovers(app, '/health'), 'recovers once the database accepts connections again')
})
