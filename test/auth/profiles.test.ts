import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, createPostgresDatabase } from '../helper.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'
import { ProfileCache } from '../../lib/auth/profile-cache.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { runScript } from '../support/run.ts'
import { redisMissing, redisReachable, redisUrl, until } from '../support/shared-state.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

t.test('the cache itself', async (t) => {
  const handle = await openDatabase({ pgliteDir: 'memory://' })
  await migrateToLatest(handle.db)
  t.teardown(() => handle.close())
  let loads = 0
  let gate: Promise<void> = Promise.resolve()
  const cache = new ProfileCache<{ n: number }>({
    db: handle.db,
    maxEntries: 2,
    ttlMs: 60_000,
    pollMs: 60_000,
    redis: null,
    onError: (err) => { throw err },
    load: async (id) => { await gate; loads++; return id === 'missing' ? undefined : { n: loads } }
  })

  t.same(await cache.get('a'), { n: 1 })
  t.same(await cache.get('a'), { n: 1 }, 'a hit does not load')
  t.equal(loads, 1)

  const [x, y] = await Promise.all([cache.get('b'), cache.get('b')])
  t.equal(x, y, 'concurrent misses share one load')
  t.equal(loads, 2)

  cache.invalidate('a')
  t.same(await cache.get('a'), { n: 3 }, 'an invalidated entry is loaded again')

  let open!: () => void
  gate = new Promise((resolve) => { open = resolve })
  const racing = cache.get('c')
  cache.invalidate('c')
  open()
  t.same(await racing, { n: 4 }, 'a load that raced an invalidation is served')
  gate = Promise.resolve()
  t.same(await cache.get('c'), { n: 5 }, '... but not kept')

  t.equal(await cache.get('missing'), undefined)
  t.ok(cache.size <= 2, 'bounded by maxEntries')
  t.equal(cache.peek('missing'), undefined, 'unknown users are not kept')
})

async function instances (t: Test, env: Record<string, string>, pollMs: number): Promise<{ a: FastifyInstance; b: FastifyInstance; idp: StandInIdp; url: string }> {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url, poolMax: 5 })
  await migrateToLatest(handle.db)
  t.teardown(() => handle.close())
  const overrides = { REVOCATION_POLL_MS: pollMs }
  const a = await buildTestApp(t, handle, overrides, { ...idp.env(), ...env })
  const b = await buildTestApp(t, handle, overrides, { ...idp.env(), ...env })
  return { a, b, idp, url }
}

const me = async (app: FastifyInstance, token: string) => (await app.inject({ url: '/api/auth/me', headers: bearer(token) })).json()

t.test('a new sign-in shows at once on its own instance, and on the others by the poll', async (t) => {
  const { a, b, idp } = await instances(t, {}, 200)
  const first = (await a.inject('/api/auth/identity?code=x')).json()
  t.same((await me(a, first.accessToken)).guilds.map((g: { id: string }) => g.id), ['900000000000000001'])
  t.same((await me(b, first.accessToken)).guilds.map((g: { id: string }) => g.id), ['900000000000000001'], 'cached on B too')

  idp.guilds = [...idp.guilds, { id: '900000000000000002', name: 'Second', icon: null, owner: true, permissions: '0' }]
  idp.user = { ...idp.user, username: 'renamed' }
  await a.inject('/api/auth/identity?code=x')
  const here = await me(a, first.accessToken)
  t.same([here.username, here.guilds.length], ['renamed', 2], 'the signing-in instance drops its entry at once')
  const took = await until(async () => (await me(b, first.accessToken)).guilds.length === 2, 2000)
  t.ok(took >= 0, `the other instance sees the new guild list after ${took} ms`)
})

t.test('user:role shows on running instances by the poll', async (t) => {
  const { a, idp, url } = await instances(t, {}, 200)
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  t.equal((await me(a, s.accessToken)).role, 'USER')
  const run = await runScript('scripts/user-role.ts', [idp.user.id, 'ADMIN'], { DATABASE_URL: url, REDIS_URL: undefined })
  t.equal(run.code, 0, run.stderr)
  const took = await until(async () => (await me(a, s.accessToken)).role === 'ADMIN', 2000)
  t.ok(took >= 0, `role seen after ${took} ms`)
})

t.test('with Redis, sign-ins and user:role reach the other instances at once', async (t) => {
  if (!(await redisReachable())) return t.fail(redisMissing)
  // The poll is set to a minute: only pub/sub can explain a change seen within a second.
  const { a, b, idp, url } = await instances(t, { REDIS_URL: redisUrl }, 60_000)
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  t.equal((await me(b, s.accessToken)).guilds.length, 1)

  idp.guilds = []
  await a.inject('/api/auth/identity?code=x')
  const took = await until(async () => (await me(b, s.accessToken)).guilds.length === 0, 1000)
  t.ok(took >= 0, `sign-in on A seen by B after ${took} ms`)

  const run = await runScript('scripts/user-role.ts', [idp.user.id, 'ADMIN'], { DATABASE_URL: url, REDIS_URL: redisUrl })
  t.equal(run.code, 0, run.stderr)
  const roleTook = await until(async () => (await me(b, s.accessToken)).role === 'ADMIN', 1000)
  t.ok(roleTook >= 0, `user:role seen by B after ${roleTook} ms`)
})
