/**
 * A flood on the change bus: hundreds of changes in a burst from one instance (revocations, each in a
 * transaction of its own or all in one, and users changed together) reach another instance whole, on
 * the notifications alone and when the listening connections are cut in the middle of the burst.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { sql } from '../../db/kysely.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import type { UserRow } from '../../db/auth.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { until } from '../support/shared-state.ts'

const BURST = 300
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const limits = { RATE_LIMIT_MAX: 100_000, AUTH_RATE_LIMIT_MAX: 100_000 }

interface Pair { handle: DatabaseHandle; a: FastifyInstance; b: FastifyInstance }

async function pair (t: Test, pollMs: number): Promise<Pair> {
  const handle = await openTestDatabase(t, 'postgres')
  const settings = { ...limits, CHANGE_POLL_MS: pollMs, PROFILE_CACHE_SIZE: 2 * BURST }
  const a = await buildTestApp(t, handle, settings)
  const b = await buildTestApp(t, handle, settings)
  return { handle, a, b }
}

/** One user with `count` live sessions, made in the database, and an access token for each (signed by instance A). */
async function sessions ({ handle, a }: Pair, count: number, name = 'flood'): Promise<{ user: UserRow; ids: string[]; tokens: string[] }> {
  const user = await handle.db.insertInto('users').values({ provider_id: `${Date.now()}${Math.floor(Math.random() * 1e6)}`, username: name, discriminator: '0', avatar: null })
    .returningAll().executeTakeFirstOrThrow()
  const { rows } = await sql<{ id: string }>`
    INSERT INTO sessions (id, user_id, expires_at)
    SELECT gen_random_uuid(), ${user.id}, now() + interval '1 day' FROM generate_series(1, ${count})
    RETURNING id`.execute(handle.db)
  const ids = rows.map((r) => r.id)
  return { user, ids, tokens: ids.map((id) => a.tokens.access(user, id)) }
}

// A client's burst: every request sent at once but at most `width` in flight (a pool's worth of connections).
async function burstOf<T> (items: T[], width: number, send: (item: T) => Promise<{ statusCode: number }>): Promise<{ statusCode: number }[]> {
  const out: { statusCode: number }[] = []
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) out.push(await send(items[next++]!))
  }))
  return out
}

const statuses = (answers: { statusCode: number }[]) => answers.reduce<Record<number, number>>((n, r) => ({ ...n, [r.statusCode]: (n[r.statusCode] ?? 0) + 1 }), {})

// Whether every token is refused (or, with `accepted`, answered) by the instance.
async function all (app: FastifyInstance, tokens: string[], status: number): Promise<boolean> {
  const answers = await Promise.all(tokens.map((token) => app.inject({ url: '/api/auth/me', headers: bearer(token) })))
  return answers.every((r) => r.statusCode === status)
}

t.test(`${BURST} revocations through instance A, each its own request, 16 at a time: instance B refuses every session`, async (t) => {
  // No fallback read within the test: only the notifications explain what B learns.
  const p = await pair(t, 60_000)
  const { tokens, ids } = await sessions(p, BURST + 1)
  const [caller, ...burst] = tokens
  t.ok(await all(p.b, tokens, 200), 'B accepts every session first')

  const started = Date.now()
  const revoked = await burstOf(ids.slice(1), 16, (id) => p.a.inject({ method: 'DELETE', url: `/api/auth/sessions/${id}`, headers: bearer(caller!) }))
  t.same(statuses(revoked), { 204: BURST }, `A revoked ${BURST} sessions in ${Date.now() - started} ms`)
  const took = await until(async () => ids.slice(1).every((id) => p.b.revocations.has(id)), 5000)
  t.ok(took >= 0, `B knew of every revocation ${took} ms after the last one`)
  t.ok(await all(p.b, burst, 401), 'B refuses every revoked session')
  t.ok(await all(p.b, [caller!], 200), 'and still serves the caller\'s own')
})

t.test(`"sign out everywhere else" over ${BURST} sessions (one transaction, ${BURST} notifications): instance B refuses every one`, async (t) => {
  const p = await pair(t, 60_000)
  const { tokens, ids } = await sessions(p, BURST + 1)
  const [caller, ...burst] = tokens
  t.ok(await all(p.b, tokens, 200))
  t.equal((await p.a.inject({ method: 'DELETE', url: '/api/auth/sessions?scope=others', headers: bearer(caller!) })).statusCode, 204)
  const took = await until(async () => ids.slice(1).every((id) => p.b.revocations.has(id)), 5000)
  t.ok(took >= 0, `B knew of all ${BURST} after ${took} ms`)
  t.ok(await all(p.b, burst, 401))
  t.ok(await all(p.b, [caller!], 200))
})

t.test(`${BURST} users changed in one statement: instance B drops every cached profile`, async (t) => {
  const p = await pair(t, 60_000)
  const { rows } = await sql<{ id: string }>`
    INSERT INTO users (provider_id, username, discriminator)
    SELECT 'flood-' || n, 'user' || n, '0' FROM generate_series(1, ${BURST}) n RETURNING id`.execute(p.handle.db)
  const ids = rows.map((r) => r.id)
  // The inserts' own notifications may drop a profile just loaded: loaded again until B holds them all.
  t.ok(await until(async () => {
    const loaded = await Promise.all(ids.map((id) => p.b.profiles.get(id)))
    return loaded.every((profile) => profile?.user.role === 'USER') && ids.every((id) => p.b.profiles.peek(id) !== undefined)
  }, 5000) >= 0, 'B holds every profile')
  await sql`UPDATE users SET role = 'ADMIN' WHERE provider_id LIKE 'flood-%'`.execute(p.handle.db)
  const took = await until(async () => ids.every((id) => p.b.profiles.peek(id) === undefined), 5000)
  t.ok(took >= 0, `B dropped all ${BURST} after ${took} ms`)
  const reloaded = await Promise.all(ids.map((id) => p.b.profiles.get(id)))
  t.ok(reloaded.every((profile) => profile?.user.role === 'ADMIN'), 'and reads every new role')
})

t.test(`the listening connections cut in the middle of a burst of ${BURST} revocations: instance B still learns every one`, async (t) => {
  // The fallback read runs, as it does by default, and at once when a listener has reconnected.
  const p = await pair(t, 1000)
  const { tokens, ids } = await sessions(p, BURST + 1)
  const [caller, ...burst] = tokens
  t.ok(await all(p.b, tokens, 200))
  const cut = async () => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND query ~* '^LISTEN'`.execute(p.handle.db)
    return rows[0]!.n
  }
  let done = 0
  const revoking = burstOf(ids.slice(1), 16, async (id) => {
    const r = await p.a.inject({ method: 'DELETE', url: `/api/auth/sessions/${id}`, headers: bearer(caller!) })
    done++
    return r
  })
  t.ok(await until(async () => done >= BURST / 4, 30_000) >= 0, 'a quarter of the burst is through')
  t.ok(await cut() >= 2, 'both instances\' listeners cut')
  const revoked = await revoking
  t.same(statuses(revoked), { 204: BURST })
  const took = await until(async () => ids.slice(1).every((id) => p.b.revocations.has(id)), 10_000)
  t.ok(took >= 0, `B knew of every revocation ${took} ms after the burst (missed: ${ids.slice(1).filter((id) => !p.b.revocations.has(id)).length})`)
  t.ok(await all(p.b, burst, 401))
  t.ok(await all(p.b, [caller!], 200))
})

t.test('a revocation committed long after it was written, while the listeners are away: instance B still learns it', async (t) => {
  const p = await pair(t, 200)
  const { tokens, ids } = await sessions(p, 5)
  t.ok(await all(p.b, tokens, 200))
  // An operator's transaction (or a slow one under load) writes the revocations, then takes its time to commit.
  const writer = await p.handle.pool.connect()
  t.teardown(() => writer.release())
  await writer.query('BEGIN')
  const { rows: [{ at }] } = await writer.query<{ at: Date }>(
    "UPDATE sessions SET revoked_at = now(), revoked_reason = 'by hand' WHERE id = ANY($1) RETURNING clock_timestamp() AS at", [ids])
  // Until B's reads of the log have moved past the moment the changes were written, with their overlap.
  t.ok(await until(async () => (await p.handle.pool.query<{ age: number }>('SELECT extract(epoch FROM clock_timestamp() - $1::timestamptz)::float8 AS age', [at])).rows[0]!.age > 3, 10_000) >= 0)
  // The commit's notifications find no listener: both were cut a moment before.
  await sql`SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = current_database() AND query ~* '^LISTEN'`.execute(p.handle.db)
  await writer.query('COMMIT')
  const took = await until(async () => ids.every((id) => p.b.revocations.has(id)), 5000)
  t.ok(took >= 0, `B knew of the revocations ${took} ms after the commit`)
  t.ok(await all(p.b, tokens, 401))
})
