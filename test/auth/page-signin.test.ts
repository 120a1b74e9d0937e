import t from 'tap'
import { buildApp, freePort, openTestDatabase, testConfig, type Teardown } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { DEFAULT_RETURN_PATH, returnPath } from '../../lib/auth/return-path.ts'

// What a browser keeps between answers: the cookies it was given, sent back on the next request.
class CookieJar {
  readonly cookies = new Map<string, string>()
  readonly attributes = new Map<string, string>()
  take (response: Response): Response {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const name = pair!.slice(0, pair!.indexOf('='))
      const value = pair!.slice(name.length + 1)
      this.attributes.set(name, line)
      if (value === '' || /Max-Age=0/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return response
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  async get (url: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.take(await fetch(url, { redirect: 'manual', headers: { cookie: this.header(), ...headers } }))
  }
}

// The values the query parser hands to the start route (each sent escaped), that must all end at /dashboard.
const hostile: [string, string][] = [
  ['an absolute URL', 'https://evil.example/'],
  ['an absolute http URL', 'http://evil.example/dashboard'],
  ['a scheme-relative URL', '//evil.example'],
  ['three slashes', '///evil.example'],
  ['a slash and a backslash', '/\\evil.example'],
  ['two backslashes', '\\\\evil.example'],
  ['a backslash and a slash', '\\/evil.example'],
  ['a backslash inside the path', '/dashboard\\..\\evil'],
  ['a backslash in the query', '/dashboard?x=\\\\evil.example'],
  ['a host name', 'evil.example'],
  ['a relative path', 'dashboard'],
  ['javascript:', 'javascript:alert(1)'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
  ['escaped slashes without the leading one', '%2F%2Fevil.example'],
  ['escaped slashes after the leading one', '/%2F%2Fevil.example'],
  ['an escaped slash second', '/%2f/evil.example'],
  ['an escaped backslash second', '/%5Cevil.example'],
  ['escaped backslashes', '/%5c%5cevil.example'],
  ['doubly escaped slashes', '/%252F%252Fevil.example'],
  ['triply escaped slashes', '/%25252F%25252Fevil.example'],
  ['escaped too deeply to read', '/%2525252525252F'],
  ['an escaped tab', '/%09/evil.example'],
  ['a tab', '/\t/evil.example'],
  ['a line feed', '/\n/evil.example'],
  ['a header injection', '/\r\nSet-Cookie: stolen=1'],
  ['an escaped header injection', '/%0d%0aSet-Cookie:%20stolen=1'],
  ['an escaped NUL', '/%00'],
  ['DEL', '/\u007f'],
  ['a leading space', ' /dashboard'],
  ['a space', '/ /evil.example'],
  ['non-ASCII', '/café'],
  ['division slashes', '/\u2215\u2215evil.example'],
  ['fullwidth solidi', '/\uff0f\uff0fevil.example'],
  ['a dot segment before slashes', '/..//evil.example'],
  ['escaped dot segments', '/%2e%2e/%2e%2e//evil.example'],
  ['a single dot segment', '/.//evil.example'],
  ['a fragment', '/#//evil.example'],
  ['a quote', '/"onmouseover="alert(1)'],
  ['markup', '/<script>alert(1)</script>'],
  ['a broken escape', '/%zz'],
  ['a trailing percent', '/dashboard%'],
  ['an escape that decodes to a broken one', '/%25zz'],
  ['empty', '']
]

// What every route refuses in any parameter (400 before any redirect): a NUL character, too long, given twice.
const refused: [string, string][] = [
  ['a NUL', `return=${encodeURIComponent('/\u0000')}`],
  ['a NUL after a good path', `return=${encodeURIComponent('/auth/token\u0000//evil.example')}`],
  ['too long', `return=${encodeURIComponent(`/${'a'.repeat(2048)}`)}`],
  ['twice, the good one first', 'return=%2Fauth%2Ftoken&return=%2F%2Fevil.example'],
  ['twice, the bad one first', 'return=%2F%2Fevil.example&return=%2Fauth%2Ftoken']
]

// Paths of this origin: kept as they are.
const kept = ['/', '/auth/token', '/dashboard?guildId=700000000000000001&since=2026-01-01T00:00:00Z', '/map?q=a%20b&next=%2F%2Fx', '/caf%C3%A9/a-b_c.d~e', `/${'a'.repeat(2047)}`]

t.test('returnPath keeps a path of this origin and makes anything else /dashboard', async (t) => {
  for (const [label, value] of hostile) t.equal(returnPath(value), DEFAULT_RETURN_PATH, label)
  for (const [label, value] of [['a NUL', '/\u0000'], ['too long', `/${'a'.repeat(2048)}`]]) t.equal(returnPath(value), DEFAULT_RETURN_PATH, label)
  for (const value of kept) t.equal(returnPath(value), value, value.slice(0, 80))
  for (const value of [undefined, null, 42, ['/auth/token'], { path: '/' }]) t.equal(returnPath(value), DEFAULT_RETURN_PATH, JSON.stringify(value))
})

/** The app on real HTTP with the development provider, its PUBLIC_URL its own address, sign-in limits out of the way. */
async function listeningDevApp (t: Teardown) {
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildApp({ config: testConfig({ PORT: port, PUBLIC_URL: base, AUTH_RATE_LIMIT_MAX: 10_000 }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { base }
}

t.test('the browser sign-in goes on to the remembered path, and never off this origin (real HTTP, development provider)', async (t) => {
  const { base } = await listeningDevApp(t)

  // The whole sign-in a browser runs, from a start URL to where the callback sends it.
  const signIn = async (start: string) => {
    const jar = new CookieJar()
    const login = await jar.get(start)
    t.equal(login.status, 302)
    const authorize = await (await fetch(login.headers.get('location')!)).text()
    const callback = /href="([^"]*code=[^"]*)"/.exec(authorize)![1]!.replace(/&#38;/g, '&')
    t.equal(new URL(callback).pathname, '/auth/callback')
    const done = await jar.get(callback)
    return { done, jar, login }
  }
  const startWith = (value: string) => `${base}/api/auth/identity/login?return=${encodeURIComponent(value)}`

  for (const [label, value] of hostile) {
    const { done, jar } = await signIn(startWith(value))
    t.same([done.status, done.headers.get('location')], [303, '/dashboard'], `${label}: to /dashboard`)
    t.ok(jar.cookies.has('refresh_token'), `${label}: signed in`)
  }
  for (const [label, query] of refused) {
    const jar = new CookieJar()
    const res = await jar.get(`${base}/api/auth/identity/login?${query}`)
    t.same([res.status, res.headers.get('location')], [400, null], `${label}: 400, no redirect`)
    t.same(Object.keys(await res.json() as object).sort(), ['error', 'message'])
    t.same([...jar.cookies.keys()], [], `${label}: no sign-in started`)
  }
  for (const query of ['return[a]=%2F%2Fevil.example', 'return=', 'next=%2F%2Fevil.example']) {
    const { done } = await signIn(`${base}/api/auth/identity/login?${query}`)
    t.same([done.status, done.headers.get('location')], [303, '/dashboard'], `?${query}: to /dashboard`)
  }
  const { done: bare } = await signIn(`${base}/api/auth/identity/login`)
  t.equal(bare.headers.get('location'), '/dashboard', 'no return: /dashboard')

  for (const value of kept) {
    const { done, jar, login } = await signIn(startWith(value))
    t.same([done.status, done.headers.get('location')], [303, value], `${value.slice(0, 80)}: returned to`)
    t.equal(new URL(done.headers.get('location')!, base).origin, base, 'on this origin')
    t.match(jar.attributes.get('refresh_token'), /HttpOnly/i)
    t.match(jar.attributes.get('refresh_token'), /SameSite=Strict/i)
    t.match(jar.attributes.get('refresh_token'), /Path=\/api\/auth/)
    t.notOk(jar.cookies.has('oauth_return'), 'the return path is forgotten once used')
    t.match(login.headers.getSetCookie().find((c) => c.startsWith('oauth_return=')), /HttpOnly.*SameSite=Lax/i, 'kept in an httpOnly cookie beside the state')
  }

  // A return cookie written by anyone but this server (unsigned) is not followed.
  const jar = new CookieJar()
  const login = await jar.get(startWith('/auth/token'))
  jar.cookies.set('oauth_return', encodeURIComponent('//evil.example'))
  const authorize = await (await fetch(login.headers.get('location')!)).text()
  const forged = await jar.get(/href="([^"]*code=[^"]*)"/.exec(authorize)![1]!.replace(/&#38;/g, '&'))
  t.same([forged.status, forged.headers.get('location')], [303, '/dashboard'], 'a forged return cookie: /dashboard')

  // Signed in through the callback: the page's renewal through the cookie hands it an access token.
  const refreshed = await fetch(`${base}/api/auth/refresh`, { method: 'POST', headers: { cookie: `refresh_token=${jar.cookies.get('refresh_token')}` } })
  t.equal(refreshed.status, 200)
  const me = await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${(await refreshed.json() as { accessToken: string }).accessToken}` } })
  t.equal((await me.json() as { username: string }).username, 'ada')
})

t.test('the callback in production: signs in, sets the refresh cookie and returns; failures answer {error, message} and count', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const config = testConfig({ SIGNIN_MAX_FAILURES: 3, SIGNIN_BLOCK_SECONDS: 60 }, { ...idp.env(), NODE_ENV: 'production', PUBLIC_URL: base, IDP_REDIRECT_URI: `${base}/auth/callback` })
  t.equal(config.isProduction, true)
  t.equal(config.devIdp, false)
  const app = await buildApp({ config, db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())

  // The start: to the provider with the state; the code comes back to /auth/callback on this server.
  const start = async (returnTo = '/auth/token?tab=1') => {
    const jar = new CookieJar()
    const login = await jar.get(`${base}/api/auth/identity/login?return=${encodeURIComponent(returnTo)}`)
    const authorize = new URL(login.headers.get('location')!)
    t.equal(authorize.origin, idp.url)
    t.equal(authorize.searchParams.get('redirect_uri'), `${base}/auth/callback`)
    return { jar, state: authorize.searchParams.get('state')! }
  }
  const json = async (res: Response) => [res.status, await res.json()]

  const { jar, state } = await start()
  for (const name of ['oauth_state', 'oauth2-code-verifier', 'oauth_return']) t.match(jar.attributes.get(name), /; Secure/, `${name} is Secure in production`)
  const done = await jar.get(`${base}/auth/callback?code=good&state=${state}`)
  t.same([done.status, done.headers.get('location')], [303, '/auth/token?tab=1'], 'back to the page that started the sign-in')
  t.same([done.headers.get('cache-control'), done.headers.get('pragma')], ['no-store', 'no-cache'], 'kept by no cache')
  t.match(jar.attributes.get('refresh_token'), /HttpOnly/i)
  t.match(jar.attributes.get('refresh_token'), /; Secure/)
  t.match(jar.attributes.get('refresh_token'), /SameSite=Strict/i)
  t.match(jar.attributes.get('has_session'), /^has_session=1; Max-Age=\d+; Path=\/; Secure; SameSite=Strict$/, 'its marker is Secure in production too')
  t.notMatch(jar.attributes.get('has_session'), /HttpOnly/i)
  t.notOk(jar.cookies.has('oauth_state'), 'the state is spent')
  const exchange = new URLSearchParams(idp.requests.find((r) => r.path === '/token')!.body)
  t.same([exchange.get('code'), exchange.get('redirect_uri')], ['good', `${base}/auth/callback`])
  t.match(exchange.get('code_verifier'), /^[\w-]{43}$/, 'with the PKCE verifier of the start')
  const refreshed = await fetch(`${base}/api/auth/refresh`, { method: 'POST', headers: { cookie: `refresh_token=${jar.cookies.get('refresh_token')}` } })
  const { accessToken } = await refreshed.json() as { accessToken: string }
  const me = await (await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })).json() as { username: string }
  t.equal(me.username, 'tester', 'the cookie the callback set renews into a working access token')
  t.equal((await fetch(`${base}/auth/token`)).status, 200, 'the token page is served in production too')
  t.equal((await fetch(`${base}/dev/idp/authorize`)).status, 404, 'no development provider')

  // Failures from one address: answered as the API's sign-in answers them.
  const again = await start()
  t.same(await json(await again.jar.get(`${base}/auth/callback?state=${again.state}&error=access_denied`)),
    [400, { error: 'Bad Request', message: 'The identity provider sent no code: the sign-in was cancelled or refused there' }], 'no code: cancelled at the provider (not counted)')
  t.same(await json(await again.jar.get(`${base}/auth/callback?code=good&state=other`)), [401, { error: 'Unauthorized', message: 'Invalid state' }], 'a state that does not match')
  t.same(await json(await again.jar.get(`${base}/auth/callback?code=good`)), [401, { error: 'Unauthorized', message: 'Invalid state' }], 'no state')
  const fresh = await start()
  t.same(await json(await fetch(`${base}/auth/callback?code=good&state=${fresh.state}`, { redirect: 'manual' })), [401, { error: 'Unauthorized', message: 'Invalid state' }], 'no state cookie')
  const blocked = await fresh.jar.get(`${base}/auth/callback?code=good&state=${fresh.state}`)
  t.same(await json(blocked), [429, { error: 'Too Many Requests', message: 'Rate limit exceeded' }], 'three failures: the address is blocked, a good sign-in too')
  t.ok(Number(blocked.headers.get('retry-after')) > 50, 'with retry-after')
  t.equal((await fetch(`${base}/auth/callback?code=good`, { method: 'HEAD' })).status, 404, 'HEAD would spend the code: there is none')
})

t.test('a code the provider refuses, and a provider that fails, at the production callback', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const config = testConfig({ SIGNIN_MAX_FAILURES: 2 }, { ...idp.env(), NODE_ENV: 'production', PUBLIC_URL: base, IDP_REDIRECT_URI: `${base}/auth/callback` })
  const app = await buildApp({ config, db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const attempt = async (code: string) => {
    const jar = new CookieJar()
    const login = await jar.get(`${base}/api/auth/identity/login`)
    const state = new URL(login.headers.get('location')!).searchParams.get('state')!
    const res = await jar.get(`${base}/auth/callback?code=${code}&state=${state}`)
    return [res.status, (await res.json() as { message: string }).message]
  }
  idp.mode = 'server-error'
  for (let i = 0; i < 3; i++) t.same(await attempt('good'), [502, 'Identity provider unavailable'], 'a provider that fails: 502, not counted')
  idp.mode = 'ok'
  t.same(await attempt('bad'), [401, 'Invalid authorization code'])
  t.same(await attempt('bad'), [401, 'Invalid authorization code'])
  t.same(await attempt('good'), [429, 'Rate limit exceeded'], 'two refused codes: blocked')
})

t.test('the has_session marker: set with the refresh cookie, readable by pages, cleared with the session', async (t) => {
  const { base } = await listeningDevApp(t)

  const signIn = async () => {
    const jar = new CookieJar()
    const login = await jar.get(`${base}/api/auth/identity/login?return=%2Fdashboard`)
    t.notOk(jar.cookies.has('has_session'), 'no marker before the sign-in')
    const authorize = await (await fetch(login.headers.get('location')!)).text()
    await jar.get(/href="([^"]*code=[^"]*)"/.exec(authorize)![1]!.replace(/&#38;/g, '&'))
    return jar
  }
  const post = async (jar: CookieJar, path: string, init: { token?: string; body?: unknown } = {}) => jar.take(await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { cookie: jar.header(), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined
  }))
  const maxAge = (line: string | undefined) => Number(/Max-Age=(\d+)/i.exec(line ?? '')?.[1])

  const jar = await signIn()
  t.equal(jar.cookies.get('has_session'), '1', 'signed in: the marker holds no secret, only 1')
  const marker = jar.attributes.get('has_session')!
  t.notMatch(marker, /HttpOnly/i, 'a page\'s script may read it')
  t.match(marker, /Path=\/(;|$)/, 'on every path, where the pages are')
  t.match(marker, /SameSite=Strict/i)
  t.notMatch(marker, /Secure/, 'not Secure outside production, like the refresh cookie')
  t.equal(maxAge(marker), maxAge(jar.attributes.get('refresh_token')), 'as long-lived as the refresh cookie')
  t.ok(maxAge(marker) > 0)

  // A renewal through the cookie sets both again; a logout clears both.
  const renewed = await post(jar, '/api/auth/refresh')
  t.equal(renewed.status, 200)
  t.same(renewed.headers.getSetCookie().map((c) => c.split('=')[0]).sort(), ['has_session', 'refresh_token'], 'a renewal sets both cookies')
  const { accessToken } = await renewed.json() as { accessToken: string }
  t.equal((await post(jar, '/api/auth/logout', { token: accessToken })).status, 204)
  t.same([jar.cookies.has('refresh_token'), jar.cookies.has('has_session')], [false, false], 'logged out: both cleared')
  t.match(jar.attributes.get('has_session'), /Path=\/(;|$)/, 'cleared on its own path')

  // Without a cookie (or with a spent one) the refusal clears the marker too.
  const none = new CookieJar()
  none.cookies.set('has_session', '1')
  t.equal((await post(none, '/api/auth/refresh')).status, 401)
  t.notOk(none.cookies.has('has_session'), 'a refused renewal through the cookie clears a stale marker')

  // A refresh token in the body that is refused says nothing about the cookie: the marker stays.
  const other = await signIn()
  t.equal((await post(other, '/api/auth/refresh', { body: { refreshToken: 'not-a-token' } })).status, 401)
  t.equal(other.cookies.get('has_session'), '1', 'a refused body token leaves the marker')

  // Sign out everywhere clears the marker of the browser that asked; its refresh cookie renews nothing anyway.
  const token = (await (await post(other, '/api/auth/refresh')).json() as { accessToken: string }).accessToken
  const everywhere = other.take(await fetch(`${base}/api/auth/sessions`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } }))
  t.equal(everywhere.status, 204)
  t.notOk(other.cookies.has('has_session'), 'sign out everywhere: the marker is cleared')
  t.match(everywhere.headers.getSetCookie()[0], /^has_session=;.*Path=\/.*SameSite=Strict/i)
  const third = await signIn()
  const token3 = (await (await post(third, '/api/auth/refresh')).json() as { accessToken: string }).accessToken
  const others = third.take(await fetch(`${base}/api/auth/sessions?scope=others`, { method: 'DELETE', headers: { authorization: `Bearer ${token3}` } }))
  t.same([others.status, others.headers.getSetCookie()], [204, []], 'sign out of the other sessions: this one\'s marker stays')

  // A session revoked elsewhere: the marker outlives it until the page's renewal is refused.
  const revoked = await signIn()
  const t4 = (await (await post(revoked, '/api/auth/refresh')).json() as { accessToken: string }).accessToken
  const { sid } = JSON.parse(Buffer.from(t4.split('.')[1]!, 'base64url').toString()) as { sid: string }
  t.equal((await fetch(`${base}/api/auth/sessions/${sid}`, { method: 'DELETE', headers: { authorization: `Bearer ${t4}` } })).status, 204)
  t.equal(revoked.cookies.get('has_session'), '1')
  t.equal((await post(revoked, '/api/auth/refresh')).status, 401)
  t.notOk(revoked.cookies.has('has_session'), 'the refused renewal of a revoked session clears it')
})
