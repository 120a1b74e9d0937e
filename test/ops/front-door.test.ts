import t, { type Test } from 'tap'
import { Writable } from 'node:stream'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { get as httpGet, type IncomingHttpHeaders } from 'node:http'
import { buildApp } from '../../app.ts'
import { loggerOptions } from '../../lib/logger.ts'
import { importPlacemarks } from '../../lib/import/placemarks.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { openTestDatabase, projectRoot, testConfig, type Teardown } from '../helper.ts'
import { redisMissing, redisReachable, redisUrl } from '../support/shared-state.ts'
import type { Config } from '../../lib/config.ts'
import { StandInIdp } from '../support/idp-server.ts'

// Cached answers over real HTTP are given by the front door, before Fastify's router; these tests hold
// them to what the framework path gives (app.inject always takes that one).

async function withSample(t: Teardown): Promise<DatabaseHandle> {
  const handle = await openTestDatabase(t, 'pglite')
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'America/Los_Angeles', source: 'sample.kml' })
  return handle
}

// A listening app that counts the requests reaching Fastify's hooks.
async function listening(t: Teardown, handle: DatabaseHandle, overrides: Partial<Config> = {}, logger?: object, env: Record<string, string> = {}) {
  const app = await buildApp({ config: testConfig(overrides, env), db: handle, logger: logger ?? false })
  const seen = { fastify: 0 }
  app.addHook('onRequest', (_request, _reply, done) => {
    seen.fastify++
    done()
  })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { app, base, seen }
}

// A GET over HTTP exactly as given (fetch would add Accept-Encoding and decompress).
function get(url: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject)
  })
}

const comparable = (headers: Record<string, unknown>) => Object.fromEntries(Object.entries(headers)
  // Each path counts its own request against the limit; the rest must match.
  .filter(([k]) => !['date', 'keep-alive', 'connection', 'x-ratelimit-remaining'].includes(k)).map(([k, v]) => [k, String(v)]))

t.test('a cached answer skips Fastify and carries the same headers and bytes as through it', async (t) => {
  const handle = await withSample(t)
  const { app, base, seen } = await listening(t, handle)
  const origin = 'http://localhost:5173'
  const cases: { url: string; headers: Record<string, string> }[] = [
    { url: '/api/v1/stats', headers: {} },
    { url: '/api/v1/stats', headers: { origin } },
    { url: '/api/v1/stats', headers: { origin: 'https://elsewhere.example' } },
    { url: '/api/v1/placemarks?limit=200', headers: { 'accept-encoding': 'gzip, deflate' } },
    { url: '/api/v1/placemarks?limit=200', headers: {} }
  ]
  for (const { url, headers } of cases) {
    await get(base + url, headers)
    const before = seen.fastify
    const front = await get(base + url, headers)
    t.equal(seen.fastify, before, `${url} ${JSON.stringify(headers)}: answered before Fastify`)
    const framework = await app.inject({ url, headers })
    t.equal(front.status, 200)
    t.same(comparable(front.headers), comparable(framework.headers), `${url} ${JSON.stringify(headers)}: same headers`)
    t.ok(front.body.equals(framework.rawPayload), 'same bytes')
  }

  const etag = (await fetch(base + '/api/v1/stats')).headers.get('etag')!
  const before = seen.fastify
  const notModified = await fetch(base + '/api/v1/stats', { headers: { 'if-none-match': etag } })
  t.equal(notModified.status, 304)
  t.equal(notModified.headers.get('etag'), etag)
  t.equal(await notModified.text(), '')
  t.equal(seen.fastify, before, 'a 304 from the cache skips Fastify too')

  // Not cached: errors, other methods, and the first request of a URL go through Fastify.
  for (const [method, url] of [['GET', '/api/v1/placemarks/999999'], ['HEAD', '/api/v1/stats'], ['GET', '/api/v1/folders']]) {
    const count = seen.fastify
    await fetch(base + url, { method })
    t.equal(seen.fastify, count + 1, `${method} ${url} reaches Fastify`)
  }
})

t.test('front-door answers count against the rate limit, and the 429 is Fastify\'s', async (t) => {
  const handle = await withSample(t)
  const { base, seen } = await listening(t, handle, { RATE_LIMIT_MAX: 3, RATE_LIMIT_WINDOW: '1 minute' })
  const answers = []
  for (let i = 0; i < 4; i++) answers.push(await fetch(base + '/api/v1/folders'))
  t.same(answers.map((r) => r.status), [200, 200, 200, 429])
  t.same(answers.map((r) => r.headers.get('x-ratelimit-remaining')), ['2', '1', '0', '0'], 'each request counted once')
  t.same(await answers[3].json(), { error: 'Too Many Requests', message: 'Rate limit exceeded' })
  t.equal(answers[3].headers.get('retry-after'), answers[3].headers.get('x-ratelimit-reset'))
  t.equal(seen.fastify, 2, 'the miss and the refusal went through Fastify; the two hits did not')
})

t.test('behind trusted proxies the front door limits the same client address as Fastify', async (t) => {
  const handle = await withSample(t)
  const { base } = await listening(t, handle, { RATE_LIMIT_MAX: 2, TRUST_PROXY: 'loopback' })
  const as = (client: string) => fetch(base + '/api/v1/folders', { headers: { 'x-forwarded-for': client } })
  t.same([(await as('203.0.113.1')).status, (await as('203.0.113.1')).status, (await as('203.0.113.1')).status], [200, 200, 429])
  t.equal((await as('203.0.113.2')).status, 200, 'another client behind the proxy has its own budget')
  t.equal((await as('203.0.113.2')).status, 200)
  t.equal((await as('203.0.113.2')).status, 429)
})

t.test('with Redis, front-door answers of two instances draw on one budget', async (t) => {
  if (!(await redisReachable())) return t.fail(redisMissing)
  // A client address of its own (through a trusted proxy): a budget no other test shares in this Redis.
  const client = `2001:db8::${randomBytes(4).toString('hex').replace(/(....)(....)/, '$1:$2')}`
  const handle = await withSample(t)
  const settings = { RATE_LIMIT_MAX: 4, RATE_LIMIT_WINDOW: '1 minute', TRUST_PROXY: 'loopback' }
  const one = await listening(t, handle, settings, undefined, { REDIS_URL: redisUrl })
  const two = await listening(t, handle, settings, undefined, { REDIS_URL: redisUrl })
  const statuses = []
  for (const base of [one.base, two.base, one.base, two.base, one.base]) {
    statuses.push((await fetch(base + '/api/v1/folders', { headers: { 'x-forwarded-for': client } })).status)
  }
  t.same(statuses, [200, 200, 200, 200, 429])
  t.equal(one.seen.fastify + two.seen.fastify, 3, 'each instance\'s miss and the refusal; the other hits skipped Fastify')
})

t.test('the request log of a front-door answer has Fastify\'s two lines', async (t) => {
  const handle = await withSample(t)
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const { base, seen } = await listening(t, handle, {}, { ...(loggerOptions('info') as object), stream })
  await fetch(base + '/api/v1/stats?token=secret-value')
  const before = seen.fastify
  await fetch(base + '/api/v1/stats?token=secret-value', { headers: { authorization: 'Bearer x' } })
  t.equal(seen.fastify, before, 'answered by the front door')
  const requests = lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')
  t.equal(requests.length, 4)
  const [framework, front] = [requests.slice(0, 2), requests.slice(2)]
  t.equal(front[0].reqId, front[1].reqId)
  t.not(front[0].reqId, framework[0].reqId, 'request ids do not repeat across the two paths')
  t.same(front[0].req, framework[0].req, 'the same request fields, the token redacted')
  t.match(front[0].req, { method: 'GET', url: '/api/v1/stats?token=[REDACTED]', host: '127.0.0.1', remoteAddress: '127.0.0.1' })
  t.match(front[1], { res: { statusCode: 200 }, responseTime: Number })
  t.notOk(JSON.stringify(lines).includes('secret-value'), 'no secret in the log')
})

// GET /api/auth/me: a valid token whose user's profile is cached is answered before the router, by the
// route's own bearer check; everything else is Fastify's.
// Sign-ins come from another address than the test's requests, whose auth budget is then their own.
async function signedIn(t: Test, overrides: Partial<Config> = {}) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'pglite')
  const server = await listening(t, handle, overrides, undefined, idp.env())
  const signIn = async () => (await server.app.inject({ url: '/api/auth/identity?code=x', remoteAddress: '203.0.113.9' })).json() as { accessToken: string; refreshToken: string }
  return { ...server, idp, signIn }
}

t.test('/api/auth/me with a cached profile skips Fastify and carries the same headers and bytes', async (t) => {
  const { app, base, seen, signIn } = await signedIn(t)
  const { accessToken } = await signIn()
  const authorization = `Bearer ${accessToken}`
  t.equal((await get(base + '/api/auth/me', { authorization })).status, 200, 'the first answer goes through Fastify')
  const cases: Record<string, string>[] = [{ authorization }, { authorization, origin: 'http://localhost:5173' }, { authorization, origin: 'https://elsewhere.example' }]
  for (const headers of cases) {
    const before = seen.fastify
    const front = await get(base + '/api/auth/me', headers)
    t.equal(seen.fastify, before, `${JSON.stringify(Object.keys(headers))}: answered before Fastify`)
    const framework = await app.inject({ url: '/api/auth/me', headers })
    t.equal(front.status, 200)
    t.same(comparable(front.headers), comparable(framework.headers), 'same headers')
    t.ok(front.body.equals(framework.rawPayload), 'same bytes')
  }
  t.match(JSON.parse((await get(base + '/api/auth/me', { authorization })).body.toString()), { username: 'tester', guilds: [{ id: '900000000000000001' }] })
})

t.test('/api/auth/me goes to Fastify without a valid token, after logout, after a change and for other forms', async (t) => {
  const { app, base, seen, idp, signIn } = await signedIn(t)
  const { accessToken } = await signIn()
  const authorization = `Bearer ${accessToken}`
  await get(base + '/api/auth/me', { authorization })

  const viaFastify = async (what: string, url: string, init: RequestInit, status: number) => {
    const before = seen.fastify
    const res = await fetch(base + url, init)
    t.equal(res.status, status, `${what}: ${status}`)
    t.equal(seen.fastify, before + 1, `${what}: answered by Fastify`)
    return res
  }
  t.same(await (await viaFastify('no token', '/api/auth/me', {}, 401)).json(), { error: 'Unauthorized', message: 'Missing authorization header' })
  t.same(await (await viaFastify('a forged token', '/api/auth/me', { headers: { authorization: `${authorization}x` } }, 401)).json(), { error: 'Unauthorized', message: 'Invalid token' })
  await viaFastify('HEAD', '/api/auth/me', { method: 'HEAD', headers: { authorization } }, 200)
  await viaFastify('a query string', '/api/auth/me?x=1', { headers: { authorization } }, 200)

  // The user changes: the next answer is loaded through Fastify, with the change, then served in front again.
  idp.user = { ...idp.user, username: 'renamed' }
  const second = await signIn()
  t.equal((await (await viaFastify('after a change', '/api/auth/me', { headers: { authorization } }, 200)).json()).username, 'renamed')
  const before = seen.fastify
  t.equal((await (await fetch(base + '/api/auth/me', { headers: { authorization } })).json()).username, 'renamed')
  t.equal(seen.fastify, before, 'then from the front door again')

  // Logout revokes the session: its token stops working at once, in front too.
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { authorization } })).statusCode, 204)
  t.same(await (await viaFastify('a revoked session', '/api/auth/me', { headers: { authorization } }, 401)).json(), { error: 'Unauthorized', message: 'Invalid token' })
  t.equal((await fetch(base + '/api/auth/me', { headers: { authorization: `Bearer ${second.accessToken}` } })).status, 200, 'the other session still works')
})

t.test('/api/auth/me at the front door counts against the auth limit, and the 429 is Fastify\'s', async (t) => {
  const { base, seen, signIn } = await signedIn(t, { AUTH_RATE_LIMIT_MAX: 4, RATE_LIMIT_WINDOW: '1 minute' })
  const { accessToken } = await signIn()
  const headers = { authorization: `Bearer ${accessToken}` }
  const before = seen.fastify
  const answers = []
  for (let i = 0; i < 4; i++) answers.push(await fetch(base + '/api/auth/me', { headers }))
  t.same(answers.map((r) => r.status), [200, 200, 200, 200])
  t.same(answers.map((r) => r.headers.get('x-ratelimit-remaining')), ['3', '2', '1', '0'], 'each request counted once')
  const refused = await fetch(base + '/api/auth/me', { headers })
  t.equal(refused.status, 429)
  t.same(await refused.json(), { error: 'Too Many Requests', message: 'Rate limit exceeded' })
  t.equal(refused.headers.get('retry-after'), refused.headers.get('x-ratelimit-reset'))
  t.equal(seen.fastify - before, 2, 'the first answer and the refusal went through Fastify; the three hits did not')
})
