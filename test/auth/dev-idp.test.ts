import t from 'tap'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { keepDevelopmentSecrets } from '../../lib/dev-secrets.ts'
import { buildApp, freePort, openTestDatabase, testConfig } from '../helper.ts'

t.test('the development identity provider signs a person in over real HTTP', async (t) => {
  const handle = await openTestDatabase(t)
  const probe = testConfig()
  t.equal(probe.devIdp, true)
  // The provider's URLs come from PUBLIC_URL, known before the server listens: take a free port first.
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildApp({ config: testConfig({ PORT: port, PUBLIC_URL: base }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())

  const login = await fetch(`${base}/api/auth/identity/login`, { redirect: 'manual' })
  t.equal(login.status, 302)
  const stateCookie = (login.headers.get('set-cookie') ?? '').split(';')[0]
  const noStore = (label: string, res: Response) =>
    t.same([res.headers.get('cache-control'), res.headers.get('pragma')], ['no-store', 'no-cache'], `${label}: kept by no cache`)
  noStore('the sign-in start', login)
  const authorize = await fetch(login.headers.get('location')!)
  noStore('the provider\'s page of codes', authorize)
  const page = await authorize.text()
  t.match(page, /Development identity provider/)
  t.match(page, /ada#0001/)
  const href = /href="([^"]*code=[^"]*)"/.exec(page)![1].replace(/&#38;/g, '&')
  const callback = new URL(href)
  t.equal(callback.pathname, '/auth/callback')

  const signIn = await fetch(`${base}/api/auth/identity?${callback.searchParams}`, { headers: { cookie: stateCookie } })
  t.equal(signIn.status, 200)
  noStore('the sign-in answer', signIn)
  const body = await signIn.json() as { accessToken: string; user: { username: string } }
  t.equal(body.user.username, 'ada')
  const me = await (await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${body.accessToken}` } })).json() as { guilds: { id: string; owner: boolean }[] }
  t.same(me.guilds.find((g) => g.id === '700000000000000001')?.owner, true)

  const reused = await fetch(`${base}/api/auth/identity?${callback.searchParams}`, { headers: { cookie: stateCookie } })
  t.equal(reused.status, 401, 'a code works once')
  const providerToken = await fetch(`${base}/dev/idp/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=authorization_code&code=used' })
  t.equal(providerToken.status, 401)
  noStore('the provider\'s token endpoint', providerToken)
  const bad = await fetch(`${base}/dev/idp/authorize?client_id=evil&redirect_uri=https://evil.example&response_type=code`)
  t.equal(bad.status, 400, 'unknown clients are refused')
})

t.test('development secrets are generated once and kept: a restart signs no one out', async (t) => {
  const dir = t.testdir({})
  const file = join(dir, 'data', 'dev-secrets.json')
  const unset = { JWT_SECRET: undefined, JWT_REFRESH_SECRET: undefined }
  const first = keepDevelopmentSecrets(testConfig(unset), file)
  t.equal(first.file, file)
  t.ok(first.config.JWT_SECRET && first.config.JWT_REFRESH_SECRET && first.config.JWT_SECRET !== first.config.JWT_REFRESH_SECRET)
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by this user only')
  const again = keepDevelopmentSecrets(testConfig(unset), file)
  t.same([again.config.JWT_SECRET, again.config.JWT_REFRESH_SECRET], [first.config.JWT_SECRET, first.config.JWT_REFRESH_SECRET], 'the next start reads the same secrets')
  t.equal(keepDevelopmentSecrets(testConfig({ ...unset, PGLITE_DIR: 'memory://' }), join(dir, 'other.json')).file, null, 'an in-memory database keeps nothing, secrets neither')
  t.equal(keepDevelopmentSecrets(testConfig(), join(dir, 'other.json')).file, null, 'secrets that are set are used as they are')
  t.notOk(existsSync(join(dir, 'other.json')))
  writeFileSync(file, '{"JWT_SECRET": "short"}')
  t.not(keepDevelopmentSecrets(testConfig(unset), file).config.JWT_SECRET, 'short', 'a damaged file is replaced')

  // Two servers one after the other on the same database and the kept secrets: a person signed in on the
  // first is still signed in on the second.
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const start = async () => {
    const app = await buildApp({ config: keepDevelopmentSecrets(testConfig({ ...unset, PORT: port, PUBLIC_URL: base }), file).config, db: handle, logger: false })
    await app.listen({ port, host: '127.0.0.1' })
    return app
  }
  const one = await start()
  const login = await fetch(`${base}/api/auth/identity/login`, { redirect: 'manual' })
  const page = await (await fetch(login.headers.get('location')!)).text()
  const callback = new URL(/href="([^"]*code=[^"]*)"/.exec(page)![1].replace(/&#38;/g, '&'))
  const signIn = await fetch(`${base}/api/auth/identity?${callback.searchParams}`, { headers: { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] } })
  const { accessToken } = await signIn.json() as { accessToken: string }
  await one.close()
  const two = await start()
  t.teardown(() => two.close())
  const me = await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${accessToken}` } })
  t.equal(me.status, 200, 'the access token from before the restart is accepted after it')
})
