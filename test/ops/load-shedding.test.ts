import t from 'tap'
import pg from 'pg'
import type { AddressInfo } from 'node:net'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { buildApp, buildTestApp, createPostgresDatabase, openTestDatabase, testConfig } from '../helper.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'

/** Keeps this process's event loop busy: stretches of `burstMs` of pure computation for `totalMs`. */
async function stall (totalMs: number, burstMs = 250): Promise<void> {
  const end = Date.now() + totalMs
  while (Date.now() < end) {
    const burst = Date.now() + burstMs
    while (Date.now() < burst) { /* busy */ }
    await yieldToLoop()
  }
}

async function until (what: string, check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

t.test('an event-loop stall sheds requests with 503 and retry-after, fails readiness, then both recover', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, { MAX_EVENT_LOOP_DELAY_MS: 100 })
  await app.boxIndex.idle()
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const get = (path: string, id?: string) => fetch(`${base}${path}`, { headers: id ? { 'x-request-id': id } : {} })

  // The start (seeding, the box index) may itself pass the low threshold for a sample.
  await until('the start to settle', async () => (await get('/health/ready')).status === 200)
  t.equal((await get('/api/v1/stats')).status, 200, 'served before the stall')

  // The sampler (every second) sees a loop blocked for 250 ms at a time.
  await stall(2500)
  const [shed, live, ready, uncachedShed, metrics] = await Promise.all([
    get('/api/v1/stats', 'shed-1'), get('/health'), get('/health/ready'), get('/api/v1/placemarks?limit=3'), get('/metrics')
  ])
  t.equal(shed.status, 503, 'a cached route is shed')
  t.same(await shed.json(), { error: 'Service Unavailable', message: 'The server is overloaded; try again shortly' })
  t.equal(shed.headers.get('retry-after'), '5', 'with retry-after')
  t.equal(shed.headers.get('x-request-id'), 'shed-1', 'with the request id')
  t.match(shed.headers.get('content-security-policy'), /default-src 'self'/, 'with the security headers')
  t.equal(uncachedShed.status, 503, 'an uncached route too')
  t.equal(live.status, 200, '/health (liveness) is still answered')
  t.same(await live.json(), { status: 'ok', box_index: 'ready' })
  t.equal(ready.status, 503, '/health/ready fails')
  t.same(await ready.json(), { status: 'unavailable', reasons: ['overloaded'] }, 'and says why')
  t.equal(metrics.status, 200, '/metrics is still answered')
  const text = await metrics.text()
  t.match(text, /load_shedding_refusals_total\{reason="event-loop-delay"\} [1-9]/, 'the refusals are counted')

  await until('the shedding to end', async () => (await get('/api/v1/stats')).status === 200)
  t.pass('requests are served again')
  t.same(await (await get('/health/ready')).json(), { status: 'ok' }, 'ready again')
  const after = await (await get('/metrics')).text()
  t.match(after, /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/stats",status_code="503"\} [1-9]/, 'the 503s are timed under their route')
})

t.test('past the heap threshold every request is shed but the probes and the metrics', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { MAX_HEAP_USED_BYTES: 1, MAX_EVENT_LOOP_DELAY_MS: 0 })
  await until('the first heap sample after the start', async () => app.overloaded())
  const res = await app.inject('/api/v1/folders')
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal((await app.inject('/health')).statusCode, 200)
  t.same((await app.inject('/health/ready')).json(), { status: 'unavailable', reasons: ['overloaded'] })
  t.match((await app.inject('/metrics')).body, /load_shedding_refusals_total\{reason="heap"\} 1/)
})

t.test('the work of the start is not taken for overload', async (t) => {
  const handle = await openTestDatabase(t)
  // A start that holds the event loop (as a first seed of the embedded database does), until the
  // sampler has seen it.
  const app = await buildApp({ config: testConfig({ MAX_EVENT_LOOP_DELAY_MS: 100 }), db: handle })
  app.register(async () => {
    const end = Date.now() + 10_000
    while (!app.isUnderPressure() && Date.now() < end) await stall(500)
  })
  await app.ready()
  t.teardown(() => app.close())
  t.ok(app.isUnderPressure(), 'the sampler saw the start')
  t.equal((await app.inject('/api/v1/folders')).statusCode, 200, 'requests right after the start are served')
  // Overload at start is not among readiness's reasons.
  t.same((await app.inject('/health/ready')).json(), { status: 'ok' })
})

t.test('shedding is off with both thresholds at 0', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { MAX_HEAP_USED_BYTES: 0, MAX_EVENT_LOOP_DELAY_MS: 0 })
  await stall(1500)
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await app.inject('/api/v1/folders')).statusCode, 200)
  t.equal(app.isUnderPressure(), false)
})

t.test('readiness does not wait for the box index (its state shows in /health), and fails while closing', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax: 5 })
  await migrateToLatest(handle.db)
  t.teardown(() => handle.close())
  // Another session holds the placemarks table: the box index's first load waits for it.
  const locker = new pg.Client({ connectionString: url })
  await locker.connect()
  t.teardown(() => locker.end())
  await locker.query('BEGIN')
  await locker.query('LOCK TABLE placemarks IN ACCESS EXCLUSIVE MODE')

  const app = await buildTestApp(t, handle)
  t.equal(app.boxIndex.state(), 'loading')
  t.same((await app.inject('/health/ready')).json(), { status: 'ok' }, 'ready while the index loads: box queries read the database')
  t.same((await app.inject('/health')).json(), { status: 'ok', box_index: 'loading' })
  t.match((await app.inject('/metrics')).body, /box_index_state\{state="loading"\} 1/)

  await locker.query('COMMIT')
  await app.boxIndex.idle()
  t.equal(app.boxIndex.state(), 'ready')
  t.same((await app.inject('/health/ready')).json(), { status: 'ok' })
  t.same((await app.inject('/health')).json(), { status: 'ok', box_index: 'ready' })

  // A readiness check in flight when the instance starts closing (its database ping waits for a
  // connection of the busy pool) answers that it is shutting down. The probes' last ping is let age
  // past its second first, so that this one pings afresh.
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const busy = Array.from({ length: 5 }, () => handle.pool.query('SELECT pg_sleep(0.5)'))
  const during = app.inject('/health/ready')
  await new Promise((resolve) => setTimeout(resolve, 50))
  const closing = app.close()
  const res = await during
  t.equal(res.statusCode, 503, 'a closing instance is not ready')
  t.same(res.json(), { status: 'unavailable', reasons: ['shutting-down'] })
  await Promise.all([closing, ...busy])
})
