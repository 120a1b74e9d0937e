import t from 'tap'
import pg from 'pg'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, createPostgresDatabase, projectRoot } from '../helper.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'
import { importPlacemarks } from '../../lib/import/placemarks.ts'
import { TcpProxy } from '../support/tcp-proxy.ts'

t.test('database outages answer 503 fast and the server recovers by itself', async (t) => {
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
  const handle = await openDatabase({ url: proxied.toString(), poolMax: 4, connectionTimeoutMillis: 500, statementTimeoutMillis: 2000 })
  t.teardown(() => handle.close())
  const app = await buildTestApp(t, handle)

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
    await new Promise((r) => setTimeout(r, 50))
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
  t.same(health.json(), { status: 'unavailable' })
  t.equal((await app.inject('/api/v1/stats')).statusCode, 200, 'cached answers keep being served')

  await proxy.start()
  let recovered = false
  for (let i = 0; i < 20 && !recovered; i++) {
    recovered = (await app.inject('/health')).statusCode === 200
    if (!recovered) await new Promise((r) => setTimeout(r, 100))
  }
  t.ok(recovered, 'health recovers when the database is back')
  t.equal((await app.inject('/api/v1/placemarks/5')).statusCode, 200)
})
