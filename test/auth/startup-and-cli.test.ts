import t from 'tap'
import { runScript, spawnScript } from '../support/run.ts'
import { Writable } from 'node:stream'
import { createServer, type AddressInfo } from 'node:net'
import { loadConfig, ConfigError } from '../../lib/config.ts'
import { buildApp } from '../helper.ts'
import { loggerOptions } from '../../lib/logger.ts'
import { createPostgresDatabase, openTestDatabase, productionSettings, testConfig, testSecrets } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { openDatabase, migrateToLatest } from '../../db/index.ts'

const production = {
  ...productionSettings,
  ...testSecrets
}

t.test('start-up refusals', async (t) => {
  t.ok(loadConfig(production).isProduction)
  t.throws(() => loadConfig({ ...production, JWT_SECRET: undefined }), new ConfigError('JWT_SECRET is required in production (at least 32 characters)'))
  t.throws(() => loadConfig({ ...production, JWT_REFRESH_SECRET: 'short' }), new ConfigError('JWT_REFRESH_SECRET must be at least 32 characters'))
  t.throws(() => loadConfig({ ...production, JWT_REFRESH_SECRET: production.JWT_SECRET }), new ConfigError('JWT_SECRET and JWT_REFRESH_SECRET must be different'))
  t.throws(() => loadConfig({ ...production, IDP_CLIENT_ID: undefined }), /IDP_CLIENT_ID is required in production/)
  t.throws(() => loadConfig({ JWT_SECRET: 'too-short' }), /JWT_SECRET must be at least 32 characters/, 'a short secret is refused in development too')
  t.throws(() => loadConfig({ PORT: 'eighty' }), /PORT/)
  t.throws(() => loadConfig({ ...production, PUBLIC_URL: undefined }), /PUBLIC_URL is required in production/)
  // A production start with several settings missing names every one of them at once.
  const all = (() => { try { loadConfig({ NODE_ENV: 'production', PORT: 'eighty', RATE_LIMIT_MAX: '-1' }); return '' } catch (err) { return (err as Error).message } })()
  t.match(all, /^2 settings need attention:\n {2}- invalid configuration: PORT .*\n {2}- invalid configuration: RATE_LIMIT_MAX /, 'invalid values, all named')
  const missing = (() => { try { loadConfig({ NODE_ENV: 'production' }); return '' } catch (err) { return (err as Error).message } })()
  for (const name of ['IDP_CLIENT_ID', 'IDP_CLIENT_SECRET', 'IDP_REDIRECT_URI', 'IDP_AUTHORIZE_URL', 'IDP_TOKEN_URL', 'IDP_USER_URL', 'IDP_GUILDS_URL', 'PUBLIC_URL', 'JWT_SECRET', 'JWT_REFRESH_SECRET']) {
    t.match(missing, new RegExp(`- ${name} is required in production`), `${name} named`)
  }
  const dev = loadConfig({})
  t.equal(dev.devIdp, true)
  t.equal(dev.JWT_SECRET, undefined, 'development may run without secrets (random ones are generated)')

  const refused = await spawnScript('server.ts', [], { ...production, JWT_SECRET: 'short', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^error: invalid configuration|JWT_SECRET must be at least 32 characters/m)
  t.match(refused.stderr, /JWT_SECRET/)
})

// The message of the configuration's refusal, or '' when it is accepted.
const configMessage = (env: Record<string, string | undefined>) => {
  try {
    loadConfig(env)
    return ''
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    return err.message
  }
}

t.test('every URL setting is checked at start, named with its problem', async (t) => {
  const httpSettings = ['PUBLIC_URL', 'IDP_REDIRECT_URI', 'IDP_AUTHORIZE_URL', 'IDP_TOKEN_URL', 'IDP_USER_URL', 'IDP_GUILDS_URL']
  for (const name of httpSettings) {
    for (const value of ['xyz', 'idp.example/authorize', 'ftp://idp.example/a', 'https://', 'http://exa mple.com']) {
      t.equal(configMessage({ ...production, [name]: value }), `invalid configuration: ${name} expected an absolute http(s) URL (got ${JSON.stringify(value)})`, `${name}=${value}`)
    }
    t.equal(configMessage({ [name]: 'not a url' }), `invalid configuration: ${name} expected an absolute http(s) URL (got "not a url")`, `${name} outside production too`)
  }
  t.equal(configMessage({ ...production, PUBLIC_URL: 'HTTP://API.example:8443/base/', IDP_USER_URL: 'http://[::1]:9/u?x=1' }), '', 'http(s) URLs with ports, paths, queries, IPv6 hosts')

  for (const name of ['DATABASE_URL', 'DATABASE_LISTEN_URL']) {
    for (const value of ['postgres://app:pw@db:5432/app', 'postgresql://db/app?sslmode=require', 'postgres://app@/app?host=/var/run/postgresql', 'postgres:///app', '/var/run/postgresql app', 'socket:/var/run/postgresql?db=app']) {
      t.equal(configMessage({ [name]: value }), '', `${name}=${value}`)
    }
    t.equal(configMessage({ [name]: 'db:5432/app' }), `invalid configuration: ${name} expected a postgres:// or postgresql:// connection URL (got "db:5432/app")`)
  }
  for (const value of ['redis://redis:6379', 'rediss://:pw@redis.example:6380/2', '/var/run/redis.sock']) t.equal(configMessage({ REDIS_URL: value }), '', `REDIS_URL=${value}`)
  t.equal(configMessage({ REDIS_URL: 'redis:6379' }), 'invalid configuration: REDIS_URL expected a redis:// or rediss:// URL (got "redis:6379")')

  // A connection URL's password never appears: not in the userinfo, not as a parameter.
  const leaks = {
    DATABASE_URL: 'mysql://app:hunter2@db/app',
    DATABASE_LISTEN_URL: 'app:hunter2@db/app?password=hunter2',
    REDIS_URL: 'http://:hunter2@redis:6379'
  }
  const leaked = configMessage(leaks)
  t.notMatch(leaked, /hunter2/, 'no password shown')
  t.match(leaked, /^3 settings need attention:/)
  t.match(leaked, '- invalid configuration: DATABASE_URL expected a postgres:// or postgresql:// connection URL (got "mysql://app:***@db/app")')
  t.match(leaked, '- invalid configuration: DATABASE_LISTEN_URL expected a postgres:// or postgresql:// connection URL (got "app:***@db/app?password=***")')
  t.match(leaked, '- invalid configuration: REDIS_URL expected a redis:// or rediss:// URL (got "http://:***@redis:6379")')
  // A secret setting that fails its rule is named, its value never shown.
  const secret = configMessage({ METRICS_TOKEN: 'hunter2-short' })
  t.equal(secret, 'invalid configuration: METRICS_TOKEN expected string length greater or equal to 16 (its value is a secret and not shown)')
  t.notMatch(secret, /hunter2/, 'no secret shown')
  for (const value of ['no-password-here', 'mysql://app@db/app', 'mysql://app@db:3306/app']) {
    t.equal(configMessage({ DATABASE_URL: value }), `invalid configuration: DATABASE_URL expected a postgres:// or postgresql:// connection URL (got ${JSON.stringify(value)})`, 'without a password, shown as it is')
  }

  t.equal(configMessage({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' }), '', 'origins')
  t.equal(configMessage({ CORS_ORIGINS: 'https://app.example.com, https://admin.example.com/' }),
    'invalid configuration: CORS_ORIGINS expected comma-separated origins (scheme://host[:port], nothing after): "https://admin.example.com/" is not one, its origin is "https://admin.example.com" (got "https://app.example.com, https://admin.example.com/")')
  t.equal(configMessage({ CORS_ORIGINS: 'app.example.com' }),
    'invalid configuration: CORS_ORIGINS expected comma-separated origins (scheme://host[:port], nothing after): "app.example.com" is not one (got "app.example.com")')

  for (const value of ['https://{s}.tile.example.org/{z}/{x}/{y}.png', '/tiles/{z}/{x}/{y}.png']) t.equal(configMessage({ MAP_TILE_URL: value }), '', `MAP_TILE_URL=${value}`)
  for (const value of ['tile.example.org/{z}/{x}/{y}.png', '//tile.example.org/{z}/{x}/{y}.png']) {
    t.equal(configMessage({ MAP_TILE_URL: value }), `invalid configuration: MAP_TILE_URL expected an absolute http(s) URL template, or a path from / on this server (got ${JSON.stringify(value)})`)
  }

  // Through the server: before anything else starts, one message naming every bad URL setting.
  const url = await createPostgresDatabase(t, { migrated: true })
  const refused = await spawnScript('server.ts', [], { ...production, DATABASE_URL: url, HOST: '127.0.0.1', PORT: '0', PUBLIC_URL: 'api.example.com', IDP_AUTHORIZE_URL: 'idp.example/authorize', IDP_USER_URL: 'xyz', IDP_REDIRECT_URI: '/auth/callback' })
  t.equal(refused.code, 1)
  t.equal(refused.stderr, [
    'error: 4 settings need attention:',
    '  - invalid configuration: PUBLIC_URL expected an absolute http(s) URL (got "api.example.com")',
    '  - invalid configuration: IDP_REDIRECT_URI expected an absolute http(s) URL (got "/auth/callback")',
    '  - invalid configuration: IDP_AUTHORIZE_URL expected an absolute http(s) URL (got "idp.example/authorize")',
    '  - invalid configuration: IDP_USER_URL expected an absolute http(s) URL (got "xyz")',
    ''
  ].join('\n'))
  t.equal(refused.stdout, '', 'nothing started')
})

t.test('a port already in use is one line that says so and what to do', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => blocker.close(resolve)))
  const port = (blocker.address() as AddressInfo).port
  const url = await createPostgresDatabase(t)
  const refused = await spawnScript('server.ts', [], { DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', NODE_ENV: 'development', LOG_LEVEL: 'silent', ...testSecrets })
  t.equal(refused.code, 1)
  t.equal(refused.stderr.trim(), `error: the server could not start: port ${port} on 127.0.0.1 is already in use (is the server already running?); stop that process or choose another port: PORT=${port + 1} npm start`)
})

t.test('logs carry no codes, tokens, secrets or Authorization values', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  let output = ''
  const stream = new Writable({ write (chunk, _enc, done) { output += chunk; done() } })
  const config = testConfig({}, { ...idp.env(), LOG_LEVEL: 'trace' })
  const app = await buildApp({ config, db: handle, logger: { ...(loggerOptions('trace') as object), stream } })
  t.teardown(() => app.close())
  const code = 'secret-authorization-code-123'
  const signIn = (await app.inject({ url: `/api/auth/identity?code=${code}&state=state-value-xyz`, headers: { cookie: 'oauth_state=whatever' } }))
  t.equal(signIn.statusCode, 401, 'unsigned state cookie refused (still logged)')
  const ok = (await app.inject(`/api/auth/identity?code=${code}`)).json()
  const refreshed = (await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: ok.refreshToken } })).json()
  await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${refreshed.accessToken}` } })
  await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { authorization: `Bearer ${refreshed.accessToken}` }, cookies: { refresh_token: refreshed.refreshToken } })
  // The same parameters escaped in ways the query parser still reads as code, state and refreshToken.
  const escaped = ['c%6Fde=escaped-code-1', '%2563ode=escaped-code-2', 'CODE=escaped-code-3', 'code%5B%5D=escaped-code-4', 'st%61te=escaped-state-5', 'refresh%5Ftoken=escaped-token-6']
  for (const param of escaped) await app.inject(`/api/auth/identity?${param}`)
  t.ok(output.length > 1000, 'something was logged')
  for (const secret of [...escaped.map((p) => p.split('=')[1]), code, 'state-value-xyz', ok.accessToken, ok.refreshToken, refreshed.accessToken, refreshed.refreshToken, testSecrets.JWT_SECRET, testSecrets.JWT_REFRESH_SECRET, 'provider-token', 'test-client-secret-value']) {
    t.notOk(output.includes(secret), `log does not contain ${secret.slice(0, 12)}…`)
  }
  t.match(output, /\[REDACTED\]/)
  t.match(output, /"reqId":"[0-9a-f]{8}-[0-9a-f-]{27}"[^\n]*"msg":"incoming request"/, 'request logs carry the request id')
})

t.test('user:role', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url })
  await migrateToLatest(handle.db)
  await handle.db.insertInto('users').values({ provider_id: '555', username: 'x', discriminator: '1', avatar: null }).execute()
  const ok = await runScript('scripts/user-role.ts', ['555', 'ADMIN'], { DATABASE_URL: url })
  t.equal(ok.code, 0, ok.stderr)
  t.equal((await handle.db.selectFrom('users').select('role').where('provider_id', '=', '555').executeTakeFirstOrThrow()).role, 'ADMIN')
  const missing = await runScript('scripts/user-role.ts', ['999', 'ADMIN'], { DATABASE_URL: url })
  t.same([missing.code, missing.stderr.trim()], [1, 'error: no user with provider id 999 (users appear after their first sign-in)'])
  const usage = await runScript('scripts/user-role.ts', ['555', 'ROOT'], { DATABASE_URL: url })
  t.equal(usage.code, 2)
  await handle.close()
})

t.test('user:role takes the role in any case', async (t) => {
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url })
  t.teardown(() => handle.close())
  await handle.db.insertInto('users').values({ provider_id: '556', username: 'y', discriminator: '1', avatar: null }).execute()
  for (const [given, stored] of [['admin', 'ADMIN'], ['User', 'USER'], ['ADMIN', 'ADMIN']]) {
    const run = await runScript('scripts/user-role.ts', ['556', given!], { DATABASE_URL: url })
    t.equal(run.code, 0, run.stderr)
    t.equal((await handle.db.selectFrom('users').select('role').where('provider_id', '=', '556').executeTakeFirstOrThrow()).role, stored, `${given} → ${stored}`)
  }
})
