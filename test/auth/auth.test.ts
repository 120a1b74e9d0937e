import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { blockDuration, MemorySigninGuard, RedisSigninGuard, type SigninGuard } from '../../lib/auth/signin-guard.ts'
import { createSigner } from 'fast-jwt'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase, testSecrets } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'

const ISSUER = 'guild-analytics'

async function setup (t: Test, kind: 'postgres' | 'pglite', overrides = {}) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, kind)
  const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000, ...overrides }, idp.env())
  return { idp, app, handle }
}

async function signIn (app: FastifyInstance, code = 'good', remoteAddress = '127.0.0.1') {
  const res = await app.inject({ url: `/api/auth/identity?code=${code}`, remoteAddress, headers: { 'user-agent': 'tap' } })
  return { res, body: res.json() }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const decode = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString())

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`sign-in, tokens and sessions on ${kind}`, async (t) => {
    const { idp, app } = await setup(t, kind, { REFRESH_REUSE_GRACE: '0' })

    const { res, body } = await signIn(app)
    t.equal(res.statusCode, 200)
    t.match(body.user, { providerId: '200000000000000001', username: 'tester', discriminator: '4242', avatar: 'abc123', role: 'USER' })
    t.match(body.user.id, /^[0-9a-f-]{36}$/)
    t.match(body.user.createdAt, /Z$/)
    const cookie = res.cookies.find((c) => c.name === 'refresh_token')
    t.match(cookie, { value: body.refreshToken, httpOnly: true, sameSite: 'Strict', path: '/api/auth' })
    const tokenRequest = new URLSearchParams(idp.requests[0].body)
    t.same([tokenRequest.get('grant_type'), tokenRequest.get('code'), tokenRequest.get('client_id'), tokenRequest.get('client_secret'), tokenRequest.get('redirect_uri')],
      ['authorization_code', 'good', 'test-client', 'test-client-secret-value', 'http://localhost:5173/callback'])

    const access = decode(body.accessToken)
    t.same(Object.keys(access).sort(), ['exp', 'iat', 'iss', 'jti', 'providerId', 'role', 'sid', 'userId', 'username'])
    t.match(access, { userId: body.user.id, providerId: '200000000000000001', username: 'tester#4242', role: 'USER', iss: ISSUER })
    t.equal(access.exp - access.iat, 900, '15 minutes')
    const refresh = decode(body.refreshToken)
    t.same(Object.keys(refresh).sort(), ['exp', 'iat', 'iss', 'tokenId', 'type', 'userId'])
    t.equal(refresh.type, 'refresh')
    t.equal(refresh.exp - refresh.iat, 7 * 86400, '7 days')

    const me = await app.inject({ url: '/api/auth/me', headers: bearer(body.accessToken) })
    t.equal(me.statusCode, 200)
    t.same(me.json().guilds, [{ id: '900000000000000001', name: 'Test Guild', icon: null, owner: false, permissions: '32' }])

    // A second sign-in replaces the guild list and opens a second session.
    idp.guilds = [{ id: '900000000000000002', name: 'Other', icon: 'i', owner: true, permissions: '0' }]
    const second = await signIn(app)
    t.equal(second.body.user.id, body.user.id, 'the same user')
    t.same((await app.inject({ url: '/api/auth/me', headers: bearer(second.body.accessToken) })).json().guilds.map((g: { id: string }) => g.id), ['900000000000000002'])
    const sessions = (await app.inject({ url: '/api/auth/sessions', headers: bearer(second.body.accessToken) })).json().sessions
    t.equal(sessions.length, 2)
    t.same(sessions.map((s: { current: boolean }) => s.current), [true, false], 'newest first, current marked')
    t.match(sessions[0], { userAgent: 'tap', ip: '127.0.0.1' })

    t.test('refresh rotates, and a reused token revokes the session', async (t) => {
      const r1 = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: body.refreshToken } })
      t.equal(r1.statusCode, 200)
      const pair = r1.json()
      t.not(pair.refreshToken, body.refreshToken)
      t.equal((await app.inject({ url: '/api/auth/me', headers: bearer(pair.accessToken) })).statusCode, 200)
      t.equal(decode(pair.accessToken).sid, access.sid, 'same session')

      const reuse = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: body.refreshToken } })
      t.same([reuse.statusCode, reuse.json()], [401, { error: 'Unauthorized', message: 'Invalid refresh token' }])
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: pair.refreshToken } })).statusCode, 401, 'the successor dies with the session')
      t.same((await app.inject({ url: '/api/auth/me', headers: bearer(pair.accessToken) })).json(), { error: 'Unauthorized', message: 'Invalid token' }, 'access tokens refused at once')
    })

    t.test('cookie-only refresh', async (t) => {
      const s = await signIn(app)
      const res = await app.inject({ method: 'POST', url: '/api/auth/refresh', cookies: { refresh_token: s.body.refreshToken } })
      t.equal(res.statusCode, 200)
      t.ok(res.cookies.find((c) => c.name === 'refresh_token' && c.value === res.json().refreshToken), 'the cookie rotates too')
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh' })).statusCode, 401, 'no token at all')
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: 'not.a.jwt' } })).statusCode, 401)
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: s.body.accessToken } })).statusCode, 401, 'an access token is not a refresh token')
    })

    t.test('logout and session revocation', async (t) => {
      const s = await signIn(app)
      const other = await signIn(app)
      const out = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.body.accessToken) })
      t.equal(out.statusCode, 204)
      t.ok(out.cookies.find((c) => c.name === 'refresh_token' && c.value === ''), 'cookie cleared')
      t.equal((await app.inject({ url: '/api/auth/me', headers: bearer(s.body.accessToken) })).statusCode, 401)
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.body.accessToken) })).statusCode, 204, 'idempotent')
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: s.body.refreshToken } })).statusCode, 401)
      t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout' })).statusCode, 401)

      const otherSid = decode(other.body.accessToken).sid
      const current = await signIn(app)
      t.equal((await app.inject({ method: 'DELETE', url: `/api/auth/sessions/${otherSid}`, headers: bearer(current.body.accessToken) })).statusCode, 204)
      t.equal((await app.inject({ url: '/api/auth/me', headers: bearer(other.body.accessToken) })).statusCode, 401, 'revoked session refused at once')
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        const res = await app.inject({ method: 'DELETE', url: `/api/auth/sessions/${id}`, headers: bearer(current.body.accessToken) })
        t.same([res.statusCode, res.json()], [404, { error: 'Not Found', message: 'Session not found' }], id)
      }
    })

    t.test("another user's session is 404", async (t) => {
      const mine = await signIn(app)
      idp.user = { id: '200000000000000099', username: 'someone', discriminator: '1', avatar: null }
      const theirs = await signIn(app)
      idp.user = { id: '200000000000000001', username: 'tester', discriminator: '4242', avatar: 'abc123' }
      const res = await app.inject({ method: 'DELETE', url: `/api/auth/sessions/${decode(theirs.body.accessToken).sid}`, headers: bearer(mine.body.accessToken) })
      t.equal(res.statusCode, 404)
      t.equal((await app.inject({ url: '/api/auth/me', headers: bearer(theirs.body.accessToken) })).statusCode, 200, 'untouched')
    })
  })
}

t.test('provider refusals', async (t) => {
  const { idp, app } = await setup(t, 'postgres', { SIGNIN_MAX_FAILURES: 100 })
  const answer = async (url: string) => {
    const res = await app.inject(url)
    return [res.statusCode, res.json().message]
  }
  t.same((await answer('/api/auth/identity'))[0], 400, 'missing code')
  t.same(await answer('/api/auth/identity?code=bad'), [401, 'Invalid authorization code'])
  idp.mode = 'missing-scope'
  t.same(await answer('/api/auth/identity?code=x'), [403, 'The identity provider did not grant the identify and guilds scopes'])
  idp.mode = 'server-error'
  t.same(await answer('/api/auth/identity?code=x'), [502, 'Identity provider unavailable'])
  idp.mode = 'garbage'
  t.same(await answer('/api/auth/identity?code=x'), [502, 'Identity provider unavailable'])
  await idp.stop()
  t.same(await answer('/api/auth/identity?code=x'), [502, 'Identity provider unavailable'], 'unreachable')
})

t.test('the provider is not trusted blindly', async (t) => {
  const { idp, app, handle } = await setup(t, 'postgres', { SIGNIN_MAX_FAILURES: 100 })
  const evil = await new StandInIdp().start()
  t.teardown(() => evil.stop())
  const answer = async () => {
    const res = await app.inject('/api/auth/identity?code=ok')
    return [res.statusCode, res.json().message]
  }
  const unusable = [502, 'Identity provider returned an unusable answer']
  const good = { ...idp.user }
  const goodGuilds = [...idp.guilds]
  const cases: [string, () => void][] = [
    ['a NUL in the username', () => { idp.user = { ...good, username: 'a\u0000b' } }],
    ['a number for an id', () => { idp.user = { ...good, id: 12345 as never } }],
    ['an over-long username', () => { idp.user = { ...good, username: 'x'.repeat(101) } }],
    ['no user object', () => { idp.rawUser = '[]' }],
    ['a user answer that is not JSON', () => { idp.rawUser = '{"id":' }],
    ['a user answer past 1 MB', () => { idp.rawUser = JSON.stringify({ ...good, bio: 'x'.repeat(1_100_000) }) }],
    ['1001 guilds', () => { idp.guilds = Array.from({ length: 1001 }, (_, i) => ({ ...goodGuilds[0], id: String(i + 1) })) }],
    ['a permission set that is not a number', () => { idp.guilds = [{ ...goodGuilds[0], permissions: 'lots' }] }],
    ['a permission set past 64 bits', () => { idp.guilds = [{ ...goodGuilds[0], permissions: '1'.repeat(25) }] }],
    ['a guild that is not an object', () => { idp.guilds = [null as never] }],
    ['a guild name with a NUL', () => { idp.guilds = [{ ...goodGuilds[0], name: 'G\u0000' }] }]
  ]
  for (const [name, arrange] of cases) {
    idp.user = { ...good }
    idp.guilds = [...goodGuilds]
    idp.rawUser = null
    arrange()
    t.same(await answer(), unusable, name)
  }
  t.equal(Number((await handle.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n), 0, 'nothing stored')
  idp.user = { ...good }
  idp.guilds = [...goodGuilds]
  idp.rawUser = null
  t.equal((await answer())[0], 200, 'a usable answer signs in')

  // The code exchange never follows a redirect: the client secret must not travel to another origin.
  idp.mode = 'redirect'
  idp.redirectTo = evil.url
  t.same(await answer(), [502, 'Identity provider unavailable'], 'a redirected exchange is a 502')
  t.same(evil.requests, [], 'the other origin received nothing')
  idp.mode = 'ok'

  // HEAD does not run the exchange.
  const before = idp.requests.length
  const head = await app.inject({ method: 'HEAD', url: '/api/auth/identity?code=ok' })
  t.equal(head.statusCode, 404, 'HEAD is not a sign-in')
  t.equal(idp.requests.length, before, 'the provider was not called')

  // The token answer is read up to 1 MB, like the user and guild answers: reading stops there.
  idp.tokenPadding = 64 * 1024 * 1024
  t.same(await answer(), [502, 'Identity provider unavailable'], 'a 64 MiB token answer is a 502, as a token answer that is not JSON')
  t.ok(idp.tokenBytesWritten < 16 * 1024 * 1024, `the provider got to send ${(idp.tokenBytesWritten / 1048576).toFixed(1)} MiB of 64 before the connection closed`)
  idp.tokenPadding = 900 * 1024
  t.equal((await answer())[0], 200, 'a token answer just under 1 MB signs in')
  idp.tokenPadding = 0
})

t.test('the browser sign-in starts on the PUBLIC_URL origin', async (t) => {
  const { app } = await setup(t, 'postgres', { PUBLIC_URL: 'http://localhost:8080' })
  const other = await app.inject({ url: '/api/auth/identity/login', headers: { host: '127.0.0.1:8080' } })
  t.equal(other.statusCode, 302)
  t.equal(other.headers.location, 'http://localhost:8080/api/auth/identity/login', 'sent to the same path on PUBLIC_URL first')
  t.notOk(other.cookies.find((c) => c.name === 'oauth_state'), 'no state cookie on the other name')
  const here = await app.inject({ url: '/api/auth/identity/login', headers: { host: 'localhost:8080' } })
  t.equal(here.statusCode, 302)
  t.match(here.headers.location, /\/authorize\?/, 'on PUBLIC_URL: to the provider')
  t.ok(here.cookies.find((c) => c.name === 'oauth_state'), 'with the state cookie')
})

t.test('state is checked against the signed cookie', async (t) => {
  const { app } = await setup(t, 'postgres')
  const login = await app.inject({ url: '/api/auth/identity/login', headers: { host: new URL(app.config.PUBLIC_URL).host } })
  t.equal(login.statusCode, 302)
  const location = new URL(login.headers.location as string)
  t.same([location.searchParams.get('client_id'), location.searchParams.get('response_type'), location.searchParams.get('scope'), location.searchParams.get('redirect_uri')],
    ['test-client', 'code', 'identify guilds', 'http://localhost:5173/callback'])
  const state = location.searchParams.get('state')!
  const stateCookie = login.cookies.find((c) => c.name === 'oauth_state')!
  t.match(stateCookie, { httpOnly: true })
  const ok = await app.inject({ url: `/api/auth/identity?code=good&state=${state}`, cookies: { oauth_state: stateCookie.value } })
  t.equal(ok.statusCode, 200)
  const wrong = await app.inject({ url: '/api/auth/identity?code=good&state=other', cookies: { oauth_state: stateCookie.value } })
  t.same([wrong.statusCode, wrong.json().message], [401, 'Invalid state'])
  const forged = await app.inject({ url: `/api/auth/identity?code=good&state=${state}`, cookies: { oauth_state: state } })
  t.equal(forged.statusCode, 401, 'an unsigned cookie is refused')
})

t.test('JWT attacks', async (t) => {
  const { app } = await setup(t, 'postgres')
  const { body } = await signIn(app)
  const claims = decode(body.accessToken)
  const { iat: _iat, exp: _exp, ...payload } = claims
  const me = async (headers: Record<string, string>) => {
    const res = await app.inject({ url: '/api/auth/me', headers })
    return [res.statusCode, res.json().message]
  }
  const sign = (key: string, extra: Record<string, unknown> = {}, opts: Record<string, unknown> = {}) =>
    createSigner({ key, algorithm: 'HS256', ...opts })({ ...payload, ...extra })
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims })).toString('base64url')}.`

  t.same(await me({}), [401, 'Missing authorization header'])
  t.same(await me({ authorization: 'Basic abc' }), [401, 'Missing authorization header'])
  t.same(await me(bearer(body.accessToken)), [200, undefined])
  t.same(await me(bearer(none)), [401, 'Invalid token'], 'alg none')
  t.same(await me(bearer(sign('a-completely-different-secret-of-enough-length', { iss: ISSUER }))), [401, 'Invalid token'], 'wrong secret')
  t.same(await me(bearer(body.refreshToken)), [401, 'Invalid token'], 'refresh token as access token')
  t.same(await me(bearer(sign(testSecrets.JWT_REFRESH_SECRET, { iss: ISSUER }))), [401, 'Invalid token'], 'signed with the refresh secret')
  t.same(await me(bearer(sign(testSecrets.JWT_SECRET, { iss: 'someone-else' }))), [401, 'Invalid token'], 'wrong issuer')
  t.same(await me(bearer(sign(testSecrets.JWT_SECRET, { iss: ISSUER }, { clockTimestamp: Date.now() - 3_600_000, expiresIn: 60_000 }))), [401, 'Token expired'])
  t.same(await me(bearer(sign(testSecrets.JWT_SECRET, { iss: ISSUER, type: 'refresh' }))), [401, 'Invalid token'], 'wrong type')
  t.same(await me(bearer('garbage')), [401, 'Invalid token'])
  t.same(await me(bearer(sign(testSecrets.JWT_SECRET, {}))), [401, 'Invalid token'], 'no issuer')
  t.same(await me(bearer(createSigner({ key: testSecrets.JWT_SECRET, algorithm: 'HS256', noTimestamp: true })({ ...payload, iss: ISSUER }))), [401, 'Invalid token'], 'no expiry')
  t.same(await me(bearer(sign(testSecrets.JWT_SECRET, { iss: ISSUER }, { algorithm: 'HS512', expiresIn: 60_000 }))), [401, 'Invalid token'], 'HS512 is not HS256')
  t.same(await me({ authorization: `Bearer ${body.accessToken} extra` }), [401, 'Invalid token'], 'two values')
  t.same(await me({ authorization: 'Bearer ' }), [401, 'Invalid token'], 'an empty token')
  const [h, p] = body.accessToken.split('.')
  const tampered = Buffer.from(JSON.stringify({ ...claims, role: 'ADMIN' })).toString('base64url')
  t.same(await me(bearer(`${h}.${tampered}.${body.accessToken.split('.')[2]}`)), [401, 'Invalid token'], 'tampered payload')
  void p
})

t.test('failed sign-ins block the IP; a burst gets one first block; a success takes back only its own attempt', async (t) => {
  const { app, idp } = await setup(t, 'postgres', { SIGNIN_MAX_FAILURES: 3, SIGNIN_BLOCK_SECONDS: 60 })
  const ip = '192.0.2.10'
  for (let i = 0; i < 3; i++) t.equal((await signIn(app, 'bad', ip)).res.statusCode, 401)
  const blocked = await signIn(app, 'good', ip)
  t.same([blocked.res.statusCode, blocked.body], [429, { error: 'Too Many Requests', message: 'Rate limit exceeded' }])
  const first = Number(blocked.res.headers['retry-after'])
  t.ok(first > 50 && first <= 60, `retry-after ${first}`)
  t.equal((await signIn(app, 'good', '192.0.2.11')).res.statusCode, 200, 'other IPs unaffected')
  for (let i = 0; i < 5; i++) await signIn(app, 'bad', ip)
  const still = Number((await signIn(app, 'good', ip)).res.headers['retry-after'])
  t.ok(still > 50 && still <= 60, `attempts while blocked do not lengthen the block (${still})`)

  // Twenty failures at once from a new address: only the threshold's worth reach the provider.
  const burstIp = '192.0.2.20'
  const exchangesBefore = idp.requests.filter((r) => r.path === '/token').length
  const burst = await Promise.all(Array.from({ length: 20 }, () => signIn(app, 'bad', burstIp)))
  const statuses = burst.map((b) => b.res.statusCode)
  t.equal(statuses.filter((s) => s === 401).length, 3, 'three refused by the provider')
  t.equal(statuses.filter((s) => s === 429).length, 17, 'the rest refused before the provider')
  t.equal(idp.requests.filter((r) => r.path === '/token').length - exchangesBefore, 3, 'the provider saw three exchanges')
  const burstWait = Math.max(...burst.map((b) => Number(b.res.headers['retry-after'] ?? 0)))
  t.ok(burstWait <= 60, `one burst gets the first block only (${burstWait} s)`)

  // A success from a shared address does not erase the failures of others behind it.
  const shared = '192.0.2.30'
  t.equal((await signIn(app, 'bad', shared)).res.statusCode, 401)
  t.equal((await signIn(app, 'bad', shared)).res.statusCode, 401)
  t.equal((await signIn(app, 'good', shared)).res.statusCode, 200)
  t.equal((await signIn(app, 'bad', shared)).res.statusCode, 401)
  t.equal((await signIn(app, 'good', shared)).res.statusCode, 429, 'the third failure still blocks despite the success between')

  // A provider that fails is not the client's fault: it does not count.
  const unlucky = '192.0.2.40'
  idp.mode = 'server-error'
  for (let i = 0; i < 5; i++) t.equal((await signIn(app, 'good', unlucky)).res.statusCode, 502)
  idp.mode = 'ok'
  t.equal((await signIn(app, 'good', unlucky)).res.statusCode, 200, 'provider failures are not held against the address')
})

t.test('every answer carrying tokens or the user\'s data is kept by no cache (RFC 6749 §5.1)', async (t) => {
  const { app } = await setup(t, 'postgres', { AUTH_RATE_LIMIT_MAX: 11, REFRESH_REUSE_GRACE: '0' })
  const noStore = (label: string, res: { statusCode: number, headers: Record<string, unknown> }, status: number) => {
    t.equal(res.statusCode, status, `${label}: ${status}`)
    t.same([res.headers['cache-control'], res.headers.pragma], ['no-store', 'no-cache'], `${label}: Cache-Control no-store, Pragma no-cache`)
  }
  const { res, body } = await signIn(app)
  noStore('sign-in', res, 200)
  noStore('sign-in refused', (await signIn(app, 'bad')).res, 401)
  const refreshed = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: body.refreshToken } })
  noStore('refresh', refreshed, 200)
  noStore('refresh by cookie', await app.inject({ method: 'POST', url: '/api/auth/refresh', cookies: { refresh_token: refreshed.json().refreshToken } }), 200)
  noStore('refresh refused', await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: body.refreshToken } }), 401)
  const second = (await signIn(app)).body
  noStore('me', await app.inject({ url: '/api/auth/me', headers: bearer(second.accessToken) }), 200)
  noStore('sessions', await app.inject({ url: '/api/auth/sessions', headers: bearer(second.accessToken) }), 200)
  noStore('me without a token', await app.inject({ url: '/api/auth/me' }), 401)
  noStore('logout', await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(second.accessToken) }), 204)
  noStore('sign-in start', await app.inject({ url: '/api/auth/identity/login', headers: { host: new URL(app.config.PUBLIC_URL).host } }), 302)
  // Eleven requests so far: the twelfth is over the group's budget.
  noStore('the auth rate limit', await app.inject({ url: '/api/auth/me' }), 429)
  t.not((await app.inject('/api/v1/folders')).headers['cache-control'], 'no-store', 'other answers keep their own caching')
})

t.test('addresses rotated inside one IPv6 /64 earn the block together, in memory and in Redis', async (t) => {
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const redis = new Redis(redisUrl)
  t.teardown(() => redis.quit())
  const random = () => Math.floor(Math.random() * 0xfff0 + 1).toString(16)
  for (const store of ['memory', 'redis'] as const) {
    const { app } = await setup(t, 'postgres', { SIGNIN_MAX_FAILURES: 3, SIGNIN_BLOCK_SECONDS: 60, ...(store === 'redis' ? { REDIS_URL: redisUrl } : {}) })
    const net = `2001:db8:${random()}:${random()}`
    // Three failures, each from a new address of the same /64 (written three ways).
    for (const ip of [`${net}::1`, `${net}:0:0:0:2`, `${net}:abcd:ef01:2345:6789`]) {
      t.equal((await signIn(app, 'bad', ip)).res.statusCode, 401, `${store}: ${ip} refused by the provider`)
    }
    const blocked = await signIn(app, 'good', `${net}:ffff::7`)
    t.equal(blocked.res.statusCode, 429, `${store}: a fourth address of the /64 is blocked`)
    t.ok(Number(blocked.res.headers['retry-after']) > 50, `${store}: for the first block's length`)
    t.equal((await signIn(app, 'good', `2001:db8:${random()}:${random()}::1`)).res.statusCode, 200, `${store}: another /64 signs in`)
    if (store === 'redis') {
      const group = new URL(`http://[${net}::]/`).hostname.slice(1, -1)
      t.equal(await redis.exists(`signin:${group}`), 1, `one Redis key for the /64 (signin:${group})`)
      t.equal(await redis.exists(`signin:${net}::1`), 0, 'none for the single address')
    }
    // An IPv4 address mapped into IPv6 is the IPv4 address.
    const v4 = `192.0.2.${Math.floor(Math.random() * 200) + 50}`
    for (let i = 0; i < 3; i++) t.equal((await signIn(app, 'bad', i % 2 ? v4 : `::ffff:${v4}`)).res.statusCode, 401)
    t.equal((await signIn(app, 'good', v4)).res.statusCode, 429, `${store}: ::ffff:${v4} and ${v4} are one client`)
  }
})

t.test('the in-process guard stays within its size, makes room in batches, and keeps blocks longest', async (t) => {
  const settings = { maxFailures: 1, windowMs: 60_000, blockMs: 60_000, maxBlockMs: 60_000, blockMemoryMs: 60_000 }
  const guard = new MemorySigninGuard(settings, 1000)
  t.equal(await guard.begin('192.0.2.1'), 0)
  t.ok(await guard.begin('192.0.2.1') > 0, 'blocked')
  for (let i = 0; i < 5000; i++) await guard.begin(`10.0.${i >> 8}.${i & 255}`)
  t.ok(guard.size <= 1000, `at most its size (${guard.size})`)
  t.ok(guard.size >= 900, `room made a tenth at a time, not one entry per new address (${guard.size})`)
  t.ok(await guard.begin('192.0.2.1') > 0, 'the blocked address is still blocked after 5,000 others')
  t.equal(await guard.begin('10.0.0.0'), 0, 'the least recently seen were forgotten')
})

t.test('later blocks double up to the documented maximum, in memory and in Redis', async (t) => {
  const settings = { maxFailures: 2, windowMs: 60_000, blockMs: 100, maxBlockMs: 350, blockMemoryMs: 60_000 }
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379')
  t.teardown(() => redis.quit())
  const memory = new MemorySigninGuard(settings)
  const guards: [string, SigninGuard][] = [['memory', memory], ['redis', new RedisSigninGuard(redis, settings, new MemorySigninGuard(settings))]]
  for (const [name, guard] of guards) {
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}-${Date.now()}`
    const blocks: number[] = []
    for (let round = 0; round < 4; round++) {
      t.equal(await guard.begin(ip), 0, `${name}: attempt 1 of round ${round}`)
      t.equal(await guard.begin(ip), 0, `${name}: attempt 2 of round ${round}`)
      const wait = await guard.begin(ip)
      blocks.push(Math.round(wait / 50) * 50)
      await new Promise((resolve) => setTimeout(resolve, wait + 20))
    }
    t.same(blocks, [100, 200, 350, 350], `${name}: 100, 200, then capped at 350 ms`)
    t.equal(blockDuration(40, settings), 350)
  }
})

t.test('a token kept by the bearer check stops working at its expiry, and another token never hits its entry', async (t) => {
  const { app } = await setup(t, 'postgres', { JWT_ACCESS_EXPIRES_IN: '3s' })
  const { body } = await signIn(app)
  const me = async (token: string) => {
    const res = await app.inject({ url: '/api/auth/me', headers: bearer(token) })
    return [res.statusCode, res.statusCode === 200 ? 'ok' : res.json().message]
  }
  t.same(await me(body.accessToken), [200, 'ok'], 'verified and kept')
  t.same(await me(body.accessToken), [200, 'ok'], 'answered from the kept verification')
  // The same signature under another payload: never the kept token's entry.
  const [header, payload, signature] = body.accessToken.split('.')
  const forged = `${header}.${Buffer.from(JSON.stringify({ ...decode(body.accessToken), role: 'ADMIN' })).toString('base64url')}.${signature}`
  t.not(payload, forged.split('.')[1])
  t.same(await me(forged), [401, 'Invalid token'], 'a payload changed under the kept signature')
  await new Promise((resolve) => setTimeout(resolve, (decode(body.accessToken).exp * 1000) - Date.now() + 50))
  t.same(await me(body.accessToken), [401, 'Token expired'], 'past its exp the kept token is refused as expired')
})
