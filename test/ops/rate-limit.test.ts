import t from 'tap'
import { Redis } from 'ioredis'
import { buildTestApp, openTestDatabase } from '../helper.ts'

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

t.test('global limit per IP with the contract body and headers', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 3, RATE_LIMIT_WINDOW: '1 minute' })
  for (let i = 0; i < 3; i++) {
    const res = await app.inject('/api/v1/folders')
    t.equal(res.statusCode, 200)
    t.equal(res.headers['x-ratelimit-limit'], '3')
    t.equal(res.headers['x-ratelimit-remaining'], String(2 - i))
  }
  const limited = await app.inject('/api/v1/folders')
  t.equal(limited.statusCode, 429)
  t.same(limited.json(), { error: 'Too Many Requests', message: 'Rate limit exceeded' })
  t.ok(Number(limited.headers['retry-after']) > 0, 'retry-after in seconds')
  t.equal((await app.inject('/health')).statusCode, 200, 'the health check is not limited')
  const other = await app.inject({ url: '/api/v1/folders', remoteAddress: '10.1.2.3' })
  t.equal(other.statusCode, 200, 'another client has its own budget')
})

t.test('TRUST_PROXY decides which address is the client', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1, TRUST_PROXY: 'true' })
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode, 429)
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.2' } })).statusCode, 200)
})

t.test('two instances sharing Redis share one budget', async (t) => {
  const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await probe.connect()
    await probe.ping()
  } catch {
    t.fail(`Redis is not reachable at ${redisUrl}; start it with: redis-server --daemonize yes --port 6379 --save "" --appendonly no`)
    probe.disconnect()
    return
  }
  const handle = await openTestDatabase(t, 'postgres')
  const ip = `198.51.100.${Math.floor(Math.random() * 250) + 1}`
  t.teardown(async () => { await probe.quit() })
  const a = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 4, REDIS_URL: redisUrl })
  const b = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 4, REDIS_URL: redisUrl })
  const codes: number[] = []
  for (const app of [a, b, a, b, a, b]) codes.push((await app.inject({ url: '/api/v1/folders', remoteAddress: ip })).statusCode)
  t.same(codes, [200, 200, 200, 200, 429, 429])
})
