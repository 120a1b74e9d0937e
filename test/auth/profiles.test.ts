import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, createPostgresDatabase } from '../helper.ts'
import { openDatabase } from '../../db/index.ts'
import { sql } from '../../db/kysely.ts'
import { ProfileCache } from '../../lib/auth/profile-cache.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { runScript } from '../support/run.ts'
import { until } from '../support/shared-state.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

t.test('the cache itself', async (t) => {
  let loads = 0
  let gate: Promise<void> = Promise.resolve()
  const cache = new ProfileCache<{ n: number }>({
    maxEntries: 2,
    ttlMs: 60_000,
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

async function instances (t: Test, pollMs: number): Promise<{ a: FastifyInstance; b: FastifyInstance; idp: StandInIdp; url: string }> {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 5 })
  t.teardown(() => handle.close())
  const a = await buildTestApp(t, handle, { CHANGE_POLL_MS: pollMs }, idp.env())
  const b = await buildTestApp(t, handle, { CHANGE_POLL_MS: pollMs }, idp.env())
  return { a, b, idp, url }
}

const me = async (app: FastifyInstance, token: string) => (await app.inject({ url: '/api/auth/me', headers: bearer(token) })).json()

// The fallback read is set to a minute: only the notifications explain a change seen within a second.
t.test('a sign-in, user:role and a hand edit reach the other instances at once', async (t) => {
  const { a, b, idp, url } = await instances(t, 60_000)
  const first = (await a.inject('/api/auth/identity?code=x')).json()
  t.same((await me(a, first.accessToken)).guilds.map((g: { id: string }) => g.id), ['900000000000000001'])
  t.same((await me(b, first.accessToken)).guilds.map((g: { id: string }) => g.id), ['900000000000000001'], 'cached on B too')

  idp.guilds = [...idp.guilds, { id: '900000000000000002', name: 'Second', icon: null, owner: true, permissions: '0' }]
  idp.user = { ...idp.user, username: 'renamed' }
  await a.inject('/api/auth/identity?code=x')
  const here = await me(a, first.accessToken)
  t.same([here.username, here.guilds.length], ['renamed', 2], 'the signing-in instance drops its entry at once')
  const took = await until(async () => (await me(b, first.accessToken)).guilds.length === 2, 1000)
  t.ok(took >= 0, `the other instance sees the new guild list after ${took} ms`)

  const run = await runScript('scripts/user-role.ts', [idp.user.id, 'ADMIN'], { DATABASE_URL: url })
  t.equal(run.code, 0, run.stderr)
  const roleTook = await until(async () => (await me(a, first.accessToken)).role === 'ADMIN' && (await me(b, first.accessToken)).role === 'ADMIN', 1000)
  t.ok(roleTook >= 0, `user:role seen by both after ${roleTook} ms`)

  // An operator's own UPDATE, outside the server and the commands: the table's trigger announces it.
  const operator = await openDatabase({ url, poolMax: 1 })
  await operator.db.updateTable('users').set({ username: 'by-hand' }).where('provider_id', '=', idp.user.id).execute()
  await operator.close()
  const handTook = await until(async () => (await me(b, first.accessToken)).username === 'by-hand', 1000)
  t.ok(handTook >= 0, `a hand edit seen after ${handTook} ms`)
})

t.test('a change whose notification was lost arrives by the fallback read of the change log', async (t) => {
  const { a, b, idp, url } = await instances(t, 200)
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  t.equal((await me(b, s.accessToken)).role, 'USER')
  // Written and logged without NOTIFY: as if the listening connection had been down at that moment.
  const operator = await openDatabase({ url, poolMax: 1 })
  await operator.db.transaction().execute(async (trx) => {
    await sql`ALTER TABLE users DISABLE TRIGGER users_change`.execute(trx)
    await trx.updateTable('users').set({ role: 'ADMIN' }).where('provider_id', '=', idp.user.id).execute()
    await sql`INSERT INTO change_log (kind, key) SELECT 'user', id::text FROM users WHERE provider_id = ${idp.user.id}`.execute(trx)
    await sql`ALTER TABLE users ENABLE TRIGGER users_change`.execute(trx)
  })
  await operator.close()
  const took = await until(async () => (await me(b, s.accessToken)).role === 'ADMIN', 2000)
  t.ok(took >= 0, `seen by the fallback read after ${took} ms`)
})
