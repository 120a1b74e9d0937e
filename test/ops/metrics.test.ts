import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, freePort, openTestDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { Histogram, Registry, type Metric } from 'prom-client'
import { RequestDurations } from '../../lib/metrics/request-durations.ts'
import { DURATION_BUCKETS } from '../../plugins/external/metrics.ts'

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

interface Sample { name: string; labels: Record<string, string>; value: number }

/**
 * The Prometheus text exposition format, checked line by line: `# HELP name text`, `# TYPE name type`,
 * and samples `name{label="value",…} number`, each sample of a family whose TYPE came first.
 */
function parsePrometheus (text: string): { samples: Sample[]; types: Map<string, string>; errors: string[] } {
  const types = new Map<string, string>()
  const samples: Sample[] = []
  const errors: string[] = []
  const name = '[a-zA-Z_:][a-zA-Z0-9_:]*'
  const sampleLine = new RegExp(`^(${name})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\.)*",?)*)\\})? (-?(?:\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?|\\+Inf|-Inf|NaN))( -?\\d+)?$`)
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (meta) {
      if (!new RegExp(`^${name}$`).test(meta[2]!)) errors.push(`bad name: ${line}`)
      if (meta[1] === 'TYPE') {
        if (!/^(counter|gauge|histogram|summary|untyped)$/.test(meta[3]!)) errors.push(`bad type: ${line}`)
        types.set(meta[2]!, meta[3]!)
      }
      continue
    }
    if (line.startsWith('#')) continue
    const m = sampleLine.exec(line)
    if (!m) {
      errors.push(`bad sample: ${line}`)
      continue
    }
    const labels: Record<string, string> = {}
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!
    const family = m[1]!.replace(/_(bucket|sum|count)$/, '')
    if (!types.has(m[1]!) && !types.has(family)) errors.push(`sample before its TYPE: ${line}`)
    samples.push({ name: m[1]!, labels, value: Number(m[3]) })
  }
  return { samples, types, errors }
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}): number =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0)

t.test('/metrics is Prometheus text whose series move with traffic', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 3, REDIS_URL: redisUrl }, idp.env())
  await app.boxIndex.idle()
  // Each step from an address of its own, so that the rate limit (3 a minute, shared in Redis) is reached only on purpose.
  const client = () => `10.21.${randomBytes(1)[0]}.${randomBytes(1)[0]}`
  const scrape = async () => {
    const res = await app.inject({ url: '/metrics', remoteAddress: '10.21.0.1' })
    t.equal(res.statusCode, 200)
    t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
    const parsed = parsePrometheus(res.body)
    t.same(parsed.errors, [], 'every line is valid exposition format')
    return parsed
  }

  const before = await scrape()
  for (const family of ['http_request_duration_seconds', 'http_requests_in_flight', 'db_pool_connections', 'dataset_cache_requests_total',
    'box_index_state', 'box_index_placemarks', 'box_index_bytes', 'dataset_version', 'signin_attempts_total', 'rate_limit_refusals_total',
    'load_shedding_refusals_total', 'redis_up', 'process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds',
    'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds']) {
    t.ok(before.types.has(family), `${family} is exposed`)
  }
  t.equal(value(before.samples, 'dataset_version'), app.datasetVersion.current(), 'the dataset version')
  t.ok(value(before.samples, 'dataset_version') > 0)
  t.equal(value(before.samples, 'box_index_state', { state: 'ready' }), 1, 'the box index is ready')
  t.equal(value(before.samples, 'box_index_state'), 1, 'one state at a time')
  t.equal(value(before.samples, 'box_index_placemarks'), app.boxIndex.loaded()!.placemarks)
  t.ok(value(before.samples, 'box_index_bytes') > 0)
  t.equal(value(before.samples, 'db_pool_connections', { state: 'total' }), handle.pool.totalCount)
  t.equal(value(before.samples, 'db_pool_connections', { state: 'waiting' }), 0)
  t.equal(value(before.samples, 'redis_up'), 1, 'Redis is up')
  t.equal(value(before.samples, 'http_requests_in_flight'), 1, 'the scrape itself is in flight')

  // A route's histogram moves under its pattern, never the raw URL; unmatched URLs share one label.
  const byId = { method: 'GET', route: '/api/v1/placemarks/:id', status_code: '200' }
  t.equal((await app.inject({ url: '/api/v1/placemarks/1', remoteAddress: client() })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/v1/placemarks/2', remoteAddress: client() })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/v1/placemarks/999999', remoteAddress: client() })).statusCode, 404)
  for (let i = 0; i < 3; i++) await app.inject({ url: `/scan-${randomBytes(4).toString('hex')}`, remoteAddress: client() })
  // Stats twice: a miss, then a hit of the response cache.
  await app.inject({ url: '/api/v1/stats', remoteAddress: client() })
  await app.inject({ url: '/api/v1/stats', remoteAddress: client() })
  // Three requests pass the global limit of an address, the fourth is refused.
  const limited = client()
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await app.inject({ url: '/api/v1/folders', remoteAddress: limited })).statusCode)
  t.same(statuses, [200, 200, 200, 429])
  // Sign-ins: one that succeeds, one with a code the provider refuses.
  t.equal((await app.inject({ url: '/api/auth/identity?code=good', remoteAddress: client() })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/auth/identity?code=bad', remoteAddress: client() })).statusCode, 401)

  const after = await scrape()
  const delta = (name: string, labels: Record<string, string> = {}) => value(after.samples, name, labels) - value(before.samples, name, labels)
  t.equal(delta('http_request_duration_seconds_count', byId), 2, 'two requests under the pattern /api/v1/placemarks/:id')
  t.equal(delta('http_request_duration_seconds_count', { ...byId, status_code: '404' }), 1, 'the unknown placemark under the same pattern, status 404')
  t.equal(delta('http_request_duration_seconds_count', { route: '__unmatched__', status_code: '404' }), 3, 'unmatched URLs under one label')
  t.notOk(after.samples.some((s) => /scan-|placemarks\/\d/.test(s.labels.route ?? '')), 'no raw URL became a label')
  t.ok(delta('http_request_duration_seconds_bucket', { ...byId, le: '+Inf' }) === 2, 'the buckets moved too')
  t.equal(delta('dataset_cache_requests_total', { result: 'miss' }), 5, 'misses: the three placemarks (a 404 is not kept), stats and folders')
  t.equal(delta('dataset_cache_requests_total', { result: 'hit' }), 3, 'hits: stats again, and folders twice (the 429 never reached the cache)')
  t.equal(delta('rate_limit_refusals_total', { limit: 'global' }), 1, 'the 429 was counted')
  t.equal(delta('http_request_duration_seconds_count', { route: '/api/v1/folders', status_code: '429' }), 1, 'and timed under its route')
  t.equal(delta('signin_attempts_total', { outcome: 'success' }), 1, 'a sign-in that succeeded')
  t.equal(delta('signin_attempts_total', { outcome: 'refused' }), 1, 'a sign-in the provider refused')
  t.equal(delta('http_request_duration_seconds_count', { route: '/metrics' }), 0, 'scrapes are not timed')
  t.equal(value(after.samples, 'http_requests_in_flight'), 1, 'every other request has ended')

  // The scrape itself is neither rate limited nor logged per request.
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ url: '/metrics', remoteAddress: limited })).statusCode, 200, 'scrapes are not rate limited')
})

t.test('the auth limit and sign-in blocks are counted', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { AUTH_RATE_LIMIT_MAX: 3, SIGNIN_MAX_FAILURES: 1 }, idp.env())
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await app.inject('/api/auth/identity?code=bad')).statusCode)
  t.same(statuses, [401, 429, 429, 429], 'one failure, then the address is blocked, then the auth limit')
  const text = (await app.inject('/metrics')).body
  const { samples } = parsePrometheus(text)
  t.equal(value(samples, 'signin_attempts_total', { outcome: 'refused' }), 1)
  t.equal(value(samples, 'signin_attempts_total', { outcome: 'blocked' }), 2, 'refused while blocked')
  t.equal(value(samples, 'rate_limit_refusals_total', { limit: 'auth' }), 1, 'the auth limit refused the fourth')
})

t.test('METRICS=false serves no /metrics; METRICS_PORT serves it on its own port only', async (t) => {
  const handle = await openTestDatabase(t)
  const off = await buildTestApp(t, handle, { METRICS: false })
  const res = await off.inject('/metrics')
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 'Not Found', message: 'Route GET /metrics not found' })
  t.ok(off.appMetrics.registry.getSingleMetric('dataset_cache_requests_total'), 'the counters exist all the same')

  const port = await freePort()
  const apart = await buildTestApp(t, handle, { METRICS_PORT: port })
  t.equal((await apart.inject('/metrics')).statusCode, 404, 'not on the API port')
  await apart.inject('/api/v1/folders')
  const scraped = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { 'x-request-id': 'scrape-1' } })
  t.equal(scraped.status, 200)
  t.equal(scraped.headers.get('x-request-id'), 'scrape-1')
  const { samples, errors } = parsePrometheus(await scraped.text())
  t.same(errors, [])
  t.equal(value(samples, 'http_request_duration_seconds_count', { route: '/api/v1/folders' }), 1, 'the API port\'s traffic, scraped on the metrics port')
  t.equal((await fetch(`http://127.0.0.1:${port}/api/v1/folders`)).status, 404, 'the metrics port serves nothing else')
  await apart.close()
  await t.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'the metrics port closes with the app')
})

t.test('the request histogram exposes the very text prom-client\'s Histogram gives for the same observations', async (t) => {
  const ours = new RequestDurations('http_request_duration_seconds', 'request duration in seconds', DURATION_BUCKETS)
  const oursRegistry = new Registry()
  oursRegistry.registerMetric(ours as unknown as Metric)
  const reference = new Registry()
  const theirs = new Histogram({ name: 'http_request_duration_seconds', help: 'request duration in seconds', labelNames: ['method', 'route', 'status_code'], buckets: DURATION_BUCKETS, registers: [reference] })
  const labels = [
    { method: 'GET', route: '/api/v1/stats', status_code: 200 },
    { method: 'GET', route: '/api/v1/placemarks/:id', status_code: 404 },
    { method: 'POST', route: '/api/auth/refresh', status_code: 401 },
    { method: 'GET', route: '__unmatched__', status_code: 404 }
  ]
  const series = labels.map((l) => ours.series(l))
  // Every bucket edge, values between them, past the last and zero.
  const values = [0, 0.001, 0.005, 0.0051, 0.01, 0.02, 0.025, 0.3, 1, 2.5, 9.99, 10, 12, 60]
  values.forEach((v, i) => {
    const k = i % labels.length
    ours.observe(series[k]!, v)
    theirs.observe(labels[k]!, v)
  })
  t.equal(await oursRegistry.metrics(), await reference.metrics(), 'the text exposition')
  const json = async (r: Registry) => JSON.parse(JSON.stringify(await r.getMetricsAsJSON())) as unknown
  t.same(await json(oursRegistry), await json(reference), 'the JSON form')
})
