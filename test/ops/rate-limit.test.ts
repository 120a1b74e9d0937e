import t from 'tap'
import { Redis } from 'ioredis'
import { fallbackStore } from '../../plugins/external/rate-limit.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { durationMs } from '../../lib/duration.ts'
import { trustProxySetting } from '../../app.ts'
import proxyAddr from '@fastify/proxy-addr'

const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

t.test('global limit per IP with the contract body and headers', async (t) => {
  const handle = await openTestDatabase(t)
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

t.test('every answer of a limited route carries the headers: miss, hit, 304, error, 429', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 6, RATE_LIMIT_WINDOW: '1 minute' })
  const miss = await app.inject('/api/v1/stats')
  const hit = await app.inject('/api/v1/stats')
  const notModified = await app.inject({ url: '/api/v1/stats', headers: { 'if-none-match': String(hit.headers.etag) } })
  const gzipHit = await app.inject({ url: '/api/v1/placemarks?limit=50', headers: { 'accept-encoding': 'gzip' } })
  const missing = await app.inject('/api/v1/placemarks/999999')
  const invalid = await app.inject('/api/v1/placemarks?limit=0')
  const limited = await app.inject('/api/v1/stats')
  t.same([miss, hit, notModified, gzipHit, missing, invalid, limited].map((r) => r.statusCode), [200, 200, 304, 200, 404, 400, 429])
  t.same([miss, hit, notModified, gzipHit, missing, invalid, limited].map((r) => r.headers['x-ratelimit-remaining']), ['5', '4', '3', '2', '1', '0', '0'])
  for (const res of [miss, hit, notModified, gzipHit, missing, invalid, limited]) {
    t.equal(res.headers['x-ratelimit-limit'], '6')
    t.ok(Number(res.headers['x-ratelimit-reset']) > 0)
  }
  t.equal(hit.headers.etag, miss.headers.etag, 'the second answer is the cached one')
  t.equal(limited.headers['retry-after'], limited.headers['x-ratelimit-reset'])
})

t.test('TRUST_PROXY decides which address is the client', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1, TRUST_PROXY: 'true' })
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.1' } })).statusCode, 429)
  t.equal((await app.inject({ url: '/api/v1/folders', headers: { 'x-forwarded-for': '203.0.113.2' } })).statusCode, 200)
})

t.test('TRUST_PROXY as a list: only the listed proxies are believed, however often each is asked about', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1, TRUST_PROXY: '10.0.0.0/8, ::ffff:192.0.2.10, loopback' })
  const from = (remoteAddress: string, xff: string) => app.inject({ url: '/api/v1/folders', remoteAddress, headers: { 'x-forwarded-for': xff } })
  const codes = []
  // Behind two trusted proxies (a listed CIDR, then loopback), the client is the address before them.
  for (let i = 0; i < 3; i++) codes.push((await from('127.0.0.1', `203.0.113.${i + 1}, 10.1.2.3`)).statusCode)
  t.same(codes, [200, 200, 200], 'three clients behind the same proxies: three budgets')
  t.equal((await from('10.9.9.9', '203.0.113.1')).statusCode, 429, 'the first client again, through another listed proxy')
  t.equal((await from('::ffff:192.0.2.10', '198.51.100.7')).statusCode, 200, 'a listed mapped address is believed')
  t.equal((await from('::ffff:192.0.2.10', '198.51.100.7')).statusCode, 429)
  // An unlisted peer is the client itself, whatever it forwards.
  t.equal((await from('192.0.2.99', '203.0.113.50')).statusCode, 200)
  t.equal((await from('192.0.2.99', '203.0.113.51')).statusCode, 429, 'an unlisted proxy\'s X-Forwarded-For is not believed')
})

t.test('TRUST_PROXY lists are proxy-addr\'s, each address decided once; a bad entry is named at start', async (t) => {
  const setting = trustProxySetting('10.0.0.0/8, 2001:db8::/32, loopback') as (address: string, hop: number) => boolean
  const reference = proxyAddr.compile(['10.0.0.0/8', '2001:db8::/32', 'loopback'])
  for (let round = 0; round < 2; round++) {
    for (const address of ['10.1.2.3', '11.0.0.1', '127.0.0.1', '::1', '::ffff:10.0.0.1', '2001:db8:1::1', '2001:db9::1', 'nonsense']) {
      t.equal(setting(address, round), reference(address, round), `${address}, round ${round + 1}`)
    }
  }
  t.throws(() => trustProxySetting('10.0.0.0/8, proxy.example'), /^TRUST_PROXY: invalid IP address: proxy\.example/)
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

t.test('the auth routes have their own budget; windows end; a bad window refuses to start', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 5, AUTH_RATE_LIMIT_MAX: 2, RATE_LIMIT_WINDOW: '400' })
  const codes = []
  for (let i = 0; i < 3; i++) codes.push((await app.inject('/api/auth/me')).statusCode)
  t.same(codes, [401, 401, 429], 'unauthenticated calls count too')
  const limited = await app.inject('/api/auth/me')
  t.equal(limited.headers['x-ratelimit-limit'], '2')
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  t.ok(Number(limited.headers['x-ratelimit-reset']) <= 1, 'reset in whole seconds, rounded up')
  const folders = await app.inject('/api/v1/folders')
  t.equal(folders.statusCode, 200, 'the global budget is separate')
  t.equal(folders.headers['x-ratelimit-limit'], '5')
  t.equal(folders.headers['x-ratelimit-remaining'], '4')
  await new Promise((resolve) => setTimeout(resolve, 450))
  t.equal((await app.inject('/api/auth/me')).statusCode, 401, 'a new window, a new budget')
  t.notOk((await app.inject('/health')).headers['x-ratelimit-limit'], 'the health check runs no limiter')
  await t.rejects(buildTestApp(t, handle, { RATE_LIMIT_WINDOW: 'soon' }), /RATE_LIMIT_WINDOW/)
})

t.test('one duration parser for every lifetime and window setting', async (t) => {
  t.equal(durationMs('1 minute'), 60_000)
  t.equal(durationMs('250'), 250)
  t.equal(durationMs('30s'), 30_000)
  t.equal(durationMs('15m'), 900_000)
  t.equal(durationMs('7d'), 604_800_000)
  t.equal(durationMs('never'), null)
  t.equal(durationMs('0'), null)
})

t.test('IPv6 clients are counted by their /64, an IPv4 client mapped into IPv6 (a server on ::) as its IPv4 address', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 2 })
  const cases = [
    { spellings: ['2001:db8:1:2::1', '2001:db8:1:2::ffff', '2001:db8:1:2:aaaa::3'], same: 'one budget for one /64', other: '2001:db8:1:3::1', otherMessage: 'another /64 has its own' },
    { spellings: ['10.9.8.7', '::ffff:10.9.8.7', '::ffff:a09:807'], same: 'one budget for the three spellings of one address', other: '::ffff:10.9.8.6', otherMessage: 'another address has its own' }
  ]
  for (const { spellings, same, other, otherMessage } of cases) {
    const codes = []
    for (const address of spellings) codes.push((await app.inject({ url: '/api/v1/folders', remoteAddress: address })).statusCode)
    t.same(codes, [200, 200, 429], same)
    t.equal((await app.inject({ url: '/api/v1/folders', remoteAddress: other })).statusCode, 200, otherMessage)
  }
})

t.test('a blocked client stays blocked however many other clients come by (the counters hold 100,000)', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1 })
  const blocked = () => app.inject({ url: '/api/v1/folders', remoteAddress: '10.200.0.1' })
  t.equal((await blocked()).statusCode, 200)
  t.equal((await blocked()).statusCode, 429, 'past its budget')
  // More clients than @fastify/rate-limit's default of 5,000 remembered addresses.
  for (let i = 0; i < 6000; i++) await app.inject({ url: '/api/v1/folders', remoteAddress: `10.201.${i >> 8}.${i & 255}` })
  t.equal((await blocked()).statusCode, 429, 'still refused after 6,000 other clients')
})

t.test('the fallback store reads a counter without counting, from Redis while it answers and from memory while it does not', async (t) => {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  await redis.ping()
  const Store = fallbackStore(redis, `rate-limit-read-test-${process.pid}:`)
  const store = new Store({})
  const call = (method: 'incr' | 'read', key: string) => new Promise<number>((resolve, reject) => {
    store[method](key, (err, result) => { if (err) reject(err); else resolve(result!.current) }, 60_000, 10)
  })
  const key = `client-${Math.random()}`
  t.equal(await call('incr', key), 1)
  t.equal(await call('incr', key), 2)
  t.equal(await call('read', key), 2, 'read: the count as it stands')
  t.equal(await call('read', key), 2, 'and reading again does not count')
  t.equal(await call('incr', key), 3)
  await redis.quit()
  t.equal(await call('read', key), 0, 'Redis gone: this instance\'s own counter, which nothing has counted yet')
  t.equal(await call('incr', key), 1)
  t.equal(await call('read', key), 1)
})
