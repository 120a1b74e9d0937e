import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { buildApp, freePort, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { launchBrowser } from '../support/browser.ts'

const artifacts = join(projectRoot, 'test-artifacts')

t.test('sign in through the development provider, then use /api/docs with the token', async (t) => {
  mkdirSync(artifacts, { recursive: true })
  const handle = await openTestDatabase(t, { sample: true })
  // The provider's URLs come from PUBLIC_URL, known before the server listens: take a free port first.
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildApp({ config: testConfig({ PORT: port, PUBLIC_URL: base }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())

  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(20_000)
  // Every page runs under the server's Content-Security-Policy: any violation, console error or
  // uncaught exception on the provider, callback or docs pages fails the test.
  const problems: string[] = []
  await page.exposeBinding('reportViolation', (_source, text: string) => { problems.push(text) })
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { reportViolation(text: string): void }).reportViolation(`CSP ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} on ${e.documentURI}`)
    })
  })
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()} (${message.location().url})`) })
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
  const policies = new Map<string, string | undefined>()
  page.on('response', (response) => {
    if (response.request().resourceType() === 'document') policies.set(new URL(response.url()).pathname, response.headers()['content-security-policy'])
  })
  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })

  // The token page's sign-in: it comes back to the page, signed in.
  await page.goto(`${base}/api/auth/identity/login?return=/auth/token`)
  await page.waitForSelector('text=Development identity provider')
  await shot('1-dev-idp')
  await page.click('a.user[data-user="ada"]')
  await page.waitForSelector('text=Signed in as ada')
  await shot('2-token-page')
  const accessToken = await page.inputValue('#access-token')
  t.match(accessToken, /^ey[\w-]+\.[\w-]+\.[\w-]+$/, 'the token page shows the access token')
  t.equal(await page.inputValue('#authorization'), `Bearer ${accessToken}`)
  t.match(await page.textContent('#user'), /"username": "ada"/)

  await page.goto(`${base}/api/docs`)
  await page.waitForSelector('.swagger-ui .btn.authorize')
  await page.click('.swagger-ui .btn.authorize')
  await page.fill('.modal-ux input[type=text]', `Bearer ${accessToken}`)
  await page.click('.modal-ux .auth-btn-wrapper button.authorize')
  await page.click('.modal-ux .btn-done')
  await shot('3-authorized')

  const tryOut = async (p: Page, path: string, params: Record<string, string> = {}) => {
    const block = p.locator('.opblock', { has: p.locator(`.opblock-summary-path[data-path="${path}"]`) }).first()
    await block.locator('.opblock-summary').click()
    await block.locator('button.try-out__btn').click()
    for (const [name, value] of Object.entries(params)) {
      await block.locator(`tr[data-param-name="${name}"] input`).fill(value)
    }
    await block.locator('button.execute').click()
    await block.locator('.live-responses-table tbody .response-col_status').first().waitFor()
    const status = (await block.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim()
    const body = await block.locator('.live-responses-table .response-col_description pre.microlight').first().textContent()
    return { status, body: body ?? '' }
  }

  const me = await tryOut(page, '/api/auth/me')
  await shot('4-me')
  t.equal(me.status, '200', 'Try it out on /api/auth/me')
  t.match(me.body, /"username": "ada"/)

  const ghosts = await tryOut(page, '/api/ghosts', { guildId: '700000000000000001' })
  await shot('5-ghosts')
  t.equal(ghosts.status, '200', 'Try it out on /api/ghosts for the demo guild')
  t.match(ghosts.body, /"ghostScore"/)

  for (const path of ['/dev/idp/authorize', '/auth/callback', '/auth/token', '/api/docs']) {
    t.match(policies.get(path), /script-src 'self'/, `${path} was served with the Content-Security-Policy`)
  }
  t.same(problems, [], 'no CSP violation, console error or page error on any page')

  // The policy is enforced and the watch above sees it: an inline script added to the docs page is refused.
  await page.evaluate(() => {
    const script = document.createElement('script')
    script.textContent = 'window.inlineRan = true'
    document.body.append(script)
  })
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.notOk(await page.evaluate(() => (window as unknown as { inlineRan?: boolean }).inlineRan), 'an inline script does not run')
  t.ok(problems.some((p) => /CSP script-src/.test(p)), 'and is reported as a CSP violation')
})
