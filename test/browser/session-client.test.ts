import t, { type Test } from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { buildApp, freePort, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { launchBrowser } from '../support/browser.ts'
import type { Config } from '../../lib/config.ts'

const artifacts = join(projectRoot, 'test-artifacts')
mkdirSync(artifacts, { recursive: true })

// The policy the pages are written for: nothing inline, every script and style from the server itself.
const strictPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"

const browser = await launchBrowser()
t.teardown(() => browser.close())

interface Refresh { at: number; status: number }
const decode = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number; iat: number; sid: string }

/** The server on a port of its own (its development provider's URLs name it), and every refresh it answered. */
async function startServer (t: Test, overrides: Partial<Config> = {}) {
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildApp({ config: testConfig({ PORT: port, PUBLIC_URL: base, ...overrides }), db: handle, logger: false })
  const refreshes: Refresh[] = []
  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url === '/api/auth/refresh') refreshes.push({ at: Date.now() - reply.elapsedTime, status: reply.statusCode })
  })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const renewed = () => refreshes.filter((r) => r.status === 200)
  return { base, refreshes, renewed }
}

/** A new browser context (its own cookies, tabs and locks) whose pages record every CSP violation and error. */
async function openContext (t: Test, base: string) {
  const context = await browser.newContext()
  t.teardown(() => context.close())
  const problems: string[] = []
  await context.exposeBinding('reportViolation', (_source, text: string) => { problems.push(text) })
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { reportViolation(text: string): void }).reportViolation(`CSP ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} on ${e.documentURI}`)
    })
  })
  // The token page is held to the strict policy (the development provider's own page is not a page of ours).
  await context.route((url) => url.origin === base && url.pathname.startsWith('/auth/token'), async (route) => {
    const response = await route.fetch()
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': strictPolicy } })
  })
  const tab = async () => {
    const page = await context.newPage()
    page.setDefaultTimeout(30_000)
    page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
    return page
  }
  return { context, problems, tab }
}

// Waits for a condition on the server's side.
async function until (condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const tokenOf = (page: Page) => page.inputValue('#access-token')
const signedOutShown = (page: Page) => page.waitForSelector('#sign-in', { state: 'visible' })
// Waits until the page holds a token other than `old`.
const tokenOtherThan = (page: Page, old: string) =>
  page.waitForFunction((previous) => {
    const value = (document.getElementById('access-token') as HTMLTextAreaElement).value
    return value !== '' && value !== previous
  }, old)

/** Signs in from `path` as a demo user through the development provider, and waits to be back on `path`, signed in. */
async function signInFrom (page: Page, base: string, path: string, user = 'ada') {
  await page.goto(`${base}${path}`)
  await signedOutShown(page)
  await page.click('#sign-in')
  await page.waitForSelector('text=Development identity provider')
  await page.click(`a.user[data-user="${user}"]`)
  await page.waitForURL(`${base}${path}`)
  await page.waitForSelector(`text=Signed in as ${user}`)
}

t.test('a page signs in through the provider, comes back to its own path and query, and keeps the token in memory only', async (t) => {
  const { base, refreshes } = await startServer(t)
  const { context, problems, tab } = await openContext(t, base)
  const page = await tab()

  await page.goto(`${base}/auth/token?from=test&x=%2F`)
  await signedOutShown(page)
  await page.screenshot({ path: join(artifacts, 'session-1-signed-out.png'), fullPage: true })
  const started = page.waitForRequest((request) => request.url().includes('/api/auth/identity/login'))
  await page.click('#sign-in')
  t.equal(new URL((await started).url()).searchParams.get('return'), '/auth/token?from=test&x=%2F', 'the sign-in starts with return= the path and query')
  await page.waitForSelector('text=Development identity provider')
  await page.click('a.user[data-user="ada"]')
  await page.waitForURL(`${base}/auth/token?from=test&x=%2F`)
  await page.waitForSelector('text=Signed in as ada')
  await page.screenshot({ path: join(artifacts, 'session-2-signed-in.png'), fullPage: true })

  const token = await tokenOf(page)
  t.match(token, /^ey[\w-]+\.[\w-]+\.[\w-]+$/, 'the page holds an access token')
  t.equal(await page.inputValue('#authorization'), `Bearer ${token}`)
  t.match(await page.textContent('#user'), /"username": "ada"/, 'read with it from /api/auth/me')
  const stored = await page.evaluate(async () => ({
    local: Object.entries(localStorage),
    session: Object.entries(sessionStorage),
    cookie: document.cookie,
    databases: (await indexedDB.databases()).map((d) => d.name)
  }))
  t.same(stored, { local: [], session: [], cookie: 'has_session=1', databases: [] }, 'nothing in localStorage, sessionStorage or IndexedDB; the only readable cookie is the session marker, which holds no secret')
  const cookies = await context.cookies()
  t.match(cookies.find((c) => c.name === 'refresh_token'), { httpOnly: true, sameSite: 'Strict', path: '/api/auth' }, 'the refresh token is an httpOnly cookie')
  t.notOk(cookies.some((c) => c.value.includes(token)), 'no cookie holds the access token')
  t.same(refreshes.map((r) => r.status), [200], 'no renewal asked before the sign-in (no session marker: the sign-in was shown), one after it')
  t.same(problems, [], 'no CSP violation, console error or page error')
})

t.test('two tabs share one token and renew it once, before it expires', async (t) => {
  const lifetimeSeconds = 16
  const { base, renewed } = await startServer(t, { JWT_ACCESS_EXPIRES_IN: `${lifetimeSeconds}s` })
  const { problems, tab } = await openContext(t, base)
  const one = await tab()
  await signInFrom(one, base, '/auth/token?tab=one')
  const first = await tokenOf(one)
  t.equal(renewed().length, 1, 'the page got its first token through the cookie the callback set')

  const two = await tab()
  await two.goto(`${base}/auth/token?tab=two`)
  await two.waitForSelector('text=Signed in as ada')
  const joined = await tokenOf(two)
  t.equal(renewed().length, 1, 'the second tab took the first tab\'s token: no renewal of its own')

  // Half the lifetime before it expires (a minute with 15-minute tokens), one tab renews and hands it on.
  const [next] = await Promise.all([tokenOtherThan(one, joined).then(() => tokenOf(one)), tokenOtherThan(two, joined)])
  t.equal(await tokenOf(two), next, 'both tabs hold the renewed token')
  await until(() => renewed().length >= 2)
  const renewals = renewed()
  t.equal(renewals.length, 2, 'renewed once for the two tabs')
  const claims = decode(joined)
  t.equal(joined, first)
  t.ok(renewals[1]!.at < claims.exp * 1000, `renewed ${claims.exp * 1000 - renewals[1]!.at} ms before the token expired`)
  const margin = Math.min(60, lifetimeSeconds / 2) * 1000
  t.ok(renewals[1]!.at >= claims.exp * 1000 - margin - 1000, 'not before the margin (min of a minute and half the lifetime)')
  t.equal(decode(next).sid, claims.sid, 'the same session')
  t.same(problems.filter((p) => !/status of 401/.test(p)), [], 'nothing logged but the renewal refused before the sign-in')
})

t.test('a 401 renews once and retries; an error answer is shown as {error, message}', async (t) => {
  const { base, renewed } = await startServer(t)
  const { problems, tab } = await openContext(t, base)
  const one = await tab()
  await signInFrom(one, base, '/auth/token')
  const two = await tab()
  // The second tab's first call is refused as if its token had expired.
  await two.route('**/api/auth/me', (route) => route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: 'Unauthorized', message: 'Token expired' }) }), { times: 1 })
  const before = await tokenOf(one)
  await two.goto(`${base}/auth/token`)
  await two.waitForSelector('text=Signed in as ada')
  await tokenOtherThan(one, before)
  await until(() => renewed().length >= 2)
  t.equal(renewed().length, 2, 'one renewal (by the tab that renews for all), then the retry succeeded')
  t.equal(await tokenOf(two), await tokenOf(one), 'and every tab took the new token')

  await two.route('**/api/auth/me', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'Service Unavailable', message: 'The database is unavailable; try again shortly' }) }), { times: 1 })
  await two.reload()
  await two.waitForSelector('text=503 Service Unavailable: The database is unavailable; try again shortly')
  t.pass('the page shows the status, error and message of the answer')
  t.equal(renewed().length, 2, 'an error that is not a 401 is not a reason to renew')
  t.same(problems.filter((p) => !/status of 401|status of 503/.test(p)), [], 'nothing but the two refused requests logged')
})

t.test('signing out, and a renewal that fails, show the sign-in in every tab', async (t) => {
  const { base } = await startServer(t, { JWT_ACCESS_EXPIRES_IN: '6s' })
  const { context, tab } = await openContext(t, base)
  const one = await tab()
  await signInFrom(one, base, '/auth/token')
  const two = await tab()
  await two.goto(`${base}/auth/token`)
  await two.waitForSelector('text=Signed in as ada')
  const token = await tokenOf(two)

  await two.click('#sign-out')
  await Promise.all([signedOutShown(one), signedOutShown(two)])
  t.pass('sign out in one tab: every tab shows the sign-in')
  t.notOk((await context.cookies()).some((c) => c.name === 'refresh_token'), 'the refresh cookie is cleared')
  t.equal((await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status, 401, 'the session is over on the server')

  // Signing in again in one tab signs in the other too.
  await signInFrom(one, base, '/auth/token')
  await two.waitForSelector('text=Signed in as ada')
  const again = await tokenOf(two)
  t.equal(again, await tokenOf(one))

  // The session ends elsewhere: the next renewal fails, and every tab shows the sign-in.
  const ended = await fetch(`${base}/api/auth/sessions/${decode(again).sid}`, { method: 'DELETE', headers: { authorization: `Bearer ${again}` } })
  t.equal(ended.status, 204)
  await Promise.all([signedOutShown(one), signedOutShown(two)])
  t.pass('a failed renewal: every tab shows the sign-in')
})

t.test('sign out everywhere ends the user\'s other sessions too', async (t) => {
  const { base } = await startServer(t)
  const { tab } = await openContext(t, base)
  const elsewhere = await openContext(t, base)
  const other = await elsewhere.tab()
  await signInFrom(other, base, '/auth/token')
  const otherToken = await tokenOf(other)
  const page = await tab()
  await signInFrom(page, base, '/auth/token')
  const token = await tokenOf(page)

  await page.click('#sign-out-everywhere')
  await signedOutShown(page)
  for (const [label, bearer] of [['this session', token], ['the other browser\'s session', otherToken]]) {
    t.equal((await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${bearer}` } })).status, 401, `${label} is over`)
  }
})
