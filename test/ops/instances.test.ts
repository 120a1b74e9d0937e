import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { redisMissing, redisReachable, redisUrl, until } from '../support/shared-state.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const sid = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()).sid

let handle: DatabaseHandle
async function pair (t: Test, env: Record<string, string>, overrides = {}): Promise<[FastifyInstance, FastifyInstance, StandInIdp]> {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  handle = await openTestDatabase(t, 'postgres')
  const a = await buildTestApp(t, handle, overrides, { ...idp.env(), ...env })
  const b = await buildTestApp(t, handle, overrides, { ...idp.env(), ...env })
  return [a, b, idp]
}

t.test('a session revoked through instance A is refused by instance B within a second', async (t) => {
  // The fallback read of the change log is set to a minute: only the notification explains it.
  const [a, b] = await pair(t, {}, { CHANGE_POLL_MS: 60_000 })
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  t.equal((await b.inject({ url: '/api/auth/me', headers: bearer(s.accessToken) })).statusCode, 200)
  t.equal((await a.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.accessToken) })).statusCode, 204)
  const took = await until(async () => (await b.inject({ url: '/api/auth/me', headers: bearer(s.accessToken) })).statusCode === 401, 1000)
  t.ok(took >= 0, `refused by B after ${took} ms (the change bus's notification)`)
})

t.test('a revocation by another session of the user, and by an operator\'s hand, reach the other instance', async (t) => {
  const [a, b] = await pair(t, {}, { CHANGE_POLL_MS: 60_000 })
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  const other = (await a.inject('/api/auth/identity?code=x')).json()
  t.equal((await a.inject({ method: 'DELETE', url: `/api/auth/sessions/${sid(s.accessToken)}`, headers: bearer(other.accessToken) })).statusCode, 204)
  const took = await until(async () => (await b.inject({ url: '/api/auth/me', headers: bearer(s.accessToken) })).statusCode === 401, 1000)
  t.ok(took >= 0, `refused by B after ${took} ms`)
  // An operator ends the other session in SQL: the sessions table's trigger announces it.
  await sql`UPDATE sessions SET revoked_at = now(), revoked_reason = 'by hand' WHERE id = ${sid(other.accessToken)}`.execute(handle.db)
  const byHand = await until(async () => (await a.inject({ url: '/api/auth/me', headers: bearer(other.accessToken) })).statusCode === 401 &&
    (await b.inject({ url: '/api/auth/me', headers: bearer(other.accessToken) })).statusCode === 401, 1000)
  t.ok(byHand >= 0, `a revocation by hand refused by both after ${byHand} ms`)
})

t.test('sign-in blocks hold across instances', async (t) => {
  if (!(await redisReachable())) return t.fail(redisMissing)
  const [a, b] = await pair(t, { REDIS_URL: redisUrl }, { SIGNIN_MAX_FAILURES: 2 })
  const ip = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`
  t.equal((await a.inject({ url: '/api/auth/identity?code=bad', remoteAddress: ip })).statusCode, 401)
  t.equal((await b.inject({ url: '/api/auth/identity?code=bad', remoteAddress: ip })).statusCode, 401)
  const blocked = await a.inject({ url: '/api/auth/identity?code=good', remoteAddress: ip })
  t.equal(blocked.statusCode, 429, 'two failures on two instances make one block')
  t.equal((await b.inject({ url: '/api/auth/identity?code=good', remoteAddress: ip })).statusCode, 429)
})

t.test('Redis away: requests keep being served', async (t) => {
  // Nothing listens on port 1: the instance runs as if Redis had gone away.
  const [a] = await pair(t, { REDIS_URL: 'redis://127.0.0.1:1' }, { RATE_LIMIT_MAX: 1000 })
  t.equal((await a.inject('/api/v1/folders')).statusCode, 200, 'counted by this instance, not failed')
  const s = await a.inject('/api/auth/identity?code=x')
  t.equal(s.statusCode, 200, 'sign-in works with the in-process fallback')
  t.equal((await a.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.json().accessToken) })).statusCode, 204)
  t.equal((await a.inject({ url: '/api/auth/me', headers: bearer(s.json().accessToken) })).statusCode, 401, 'revocation still immediate here')
})

t.test('sign out everywhere, an admin\'s role change and the reuse grace window across two instances sharing PostgreSQL and Redis', async (t) => {
  if (!(await redisReachable())) return t.fail(redisMissing)
  const [a, b, idp] = await pair(t, { REDIS_URL: redisUrl }, { CHANGE_POLL_MS: 60_000, REFRESH_REUSE_GRACE: '10s' })
  const s = (await a.inject('/api/auth/identity?code=x')).json()
  const other = (await b.inject('/api/auth/identity?code=x')).json()
  // Two tabs refresh with the same token at the same moment, one through each instance.
  const [one, two] = await Promise.all([a, b].map((app) => app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: s.refreshToken } })))
  t.same([one!.statusCode, two!.statusCode], [200, 200], 'both tabs get a pair')
  t.equal(sid(one!.json().accessToken), sid(two!.json().accessToken), 'of the same session')
  t.equal((await b.inject({ url: '/api/auth/me', headers: bearer(one!.json().accessToken) })).statusCode, 200, 'which lives on')

  t.equal((await a.inject({ method: 'DELETE', url: '/api/auth/sessions?scope=others', headers: bearer(s.accessToken) })).statusCode, 204)
  const took = await until(async () => (await b.inject({ url: '/api/auth/me', headers: bearer(other.accessToken) })).statusCode === 401, 1000)
  t.ok(took >= 0, `the other session refused by B after ${took} ms`)
  t.equal((await b.inject({ url: '/api/auth/me', headers: bearer(s.accessToken) })).statusCode, 200, 'the caller\'s own stays')

  // An admin on A promotes a user; B lets the user into the admin API at the next request.
  idp.user = { id: '400000000000000009', username: 'root', discriminator: '0', avatar: null }
  const root = (await a.inject('/api/auth/identity?code=x')).json()
  await sql`UPDATE users SET role = 'ADMIN' WHERE provider_id = '400000000000000009'`.execute(handle.db)
  const userId = s.user.id
  await until(async () => (await a.inject({ url: '/api/admin/users', headers: bearer(root.accessToken) })).statusCode === 200, 1000)
  t.equal((await b.inject({ url: '/api/admin/users', headers: bearer(s.accessToken) })).statusCode, 403)
  t.equal((await a.inject({ method: 'PATCH', url: `/api/admin/users/${userId}`, headers: bearer(root.accessToken), payload: { role: 'ADMIN' } })).statusCode, 200)
  const promoted = await until(async () => (await b.inject({ url: '/api/admin/users', headers: bearer(s.accessToken) })).statusCode === 200, 1000)
  t.ok(promoted >= 0, `the new admin let in by B after ${promoted} ms`)
})
