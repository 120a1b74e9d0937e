import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp, type StandInUser } from '../support/idp-server.ts'
import { setRole } from '../../db/auth.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { sql } from '../../db/kysely.ts'
import { TRANSACTION_ATTEMPTS } from '../../db/transaction.ts'

// Refresh-token replays within the grace window, and the races between account deletion, refreshes and
// role changes: on PostgreSQL, where transactions really run side by side.

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
interface Pair { accessToken: string; refreshToken: string; user: { id: string } }

async function setup (t: Test, overrides = {}) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000, DB_POOL_MAX: 8, AUTH_RATE_LIMIT_MAX: 10000, ...overrides }, idp.env())
  let n = 0
  const signIn = async (user?: StandInUser): Promise<Pair> => {
    idp.user = user ?? { id: `40000000000000${String(++n).padStart(4, '0')}`, username: `user${n}`, discriminator: '0', avatar: null }
    const res = await app.inject({ url: '/api/auth/identity?code=good', headers: { 'user-agent': 'tap' } })
    if (res.statusCode !== 200) throw new Error(`sign-in answered ${res.statusCode}`)
    return res.json() as Pair
  }
  return { app, handle, signIn, idp }
}

const refresh = (app: FastifyInstance, refreshToken: string) =>
  app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
const me = async (app: FastifyInstance, token: string) => (await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode
const tokenId = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).tokenId as string

t.test('replays within the grace window share one successor: no fork of the chain', async (t) => {
  // Wide enough that the replays land within it on a busy machine.
  const graceMs = 2500
  const { app, signIn } = await setup(t, { REFRESH_REUSE_GRACE: `${graceMs}ms` })
  const first = await signIn()
  const rotated = await refresh(app, first.refreshToken)
  t.equal(rotated.statusCode, 200, 'the rotation')
  const rotatedAt = Date.now()
  const replays = await Promise.all([1, 2, 3].map(() => refresh(app, first.refreshToken)))
  t.ok(Date.now() - rotatedAt < graceMs, 'the replays land within the window')
  t.same(replays.map((r) => r.statusCode), [200, 200, 200], 'each replay in the window gets a pair')
  const successors = [rotated, ...replays].map((r) => (r.json() as Pair).refreshToken)
  t.equal(new Set(successors.map(tokenId)).size, 1, 'every replay is handed the same successor')

  const history = (await app.inject({ url: '/api/auth/history', headers: bearer((rotated.json() as Pair).accessToken) })).json() as { events: { type: string }[] }
  t.equal(history.events.filter((e) => e.type === 'refresh_replay').length, 3, 'every replay in the window is in the history')

  // Past the window: of every refresh token handed out, at most two can still be rotated (here one: they
  // are one token), and presenting them all again moves one chain only.
  t.ok(new Set(successors.map(tokenId)).size <= 2, 'at most two refresh tokens left to rotate')
  await new Promise((resolve) => setTimeout(resolve, graceMs - (Date.now() - rotatedAt) + 50))
  const later = await Promise.all(successors.map((token) => refresh(app, token)))
  t.same(later.map((r) => r.statusCode), [200, 200, 200, 200], 'one rotation and its replays')
  t.equal(new Set(later.map((r) => tokenId((r.json() as Pair).refreshToken))).size, 1, 'one chain')
  // And past that rotation's own window, presenting the spent token again is reuse, which ends the session.
  await new Promise((resolve) => setTimeout(resolve, graceMs + 50))
  t.equal((await refresh(app, successors[2]!)).statusCode, 401, 'reuse after the window')
  t.equal(await me(app, (later[0]!.json() as Pair).accessToken), 401, 'ends the session')
})

t.test('a replay in the window after the successor moved on gets that same successor, which is spent', async (t) => {
  const { app, signIn } = await setup(t, { REFRESH_REUSE_GRACE: '5s' })
  const first = await signIn()
  const second = (await refresh(app, first.refreshToken)).json() as Pair
  t.equal((await refresh(app, second.refreshToken)).statusCode, 200, 'the successor is rotated in turn')
  const replay = await refresh(app, first.refreshToken)
  t.equal(replay.statusCode, 200, 'a replay of the first token in its window')
  t.equal(tokenId((replay.json() as Pair).refreshToken), tokenId(second.refreshToken), 'is handed the same successor')
  t.equal((await refresh(app, (replay.json() as Pair).refreshToken)).statusCode, 200, 'which, spent within its own window, is a second tab too')
})

const TRIALS = 12

t.test('deleting an account while its refresh token is rotated: never a 5xx, and nothing of the account works after', async (t) => {
  const { app, signIn } = await setup(t, { REFRESH_REUSE_GRACE: '10s' })
  const seen: number[] = []
  for (let i = 0; i < TRIALS; i++) {
    const user = await signIn()
    const answers = await Promise.all([
      app.inject({ method: 'DELETE', url: '/api/auth/me', headers: bearer(user.accessToken) }),
      refresh(app, user.refreshToken),
      refresh(app, user.refreshToken)
    ])
    const statuses = answers.map((a) => a.statusCode)
    seen.push(...statuses)
    t.ok(statuses.every((s) => s < 500), `trial ${i}: ${statuses.join(',')}`)
    t.equal(statuses[0], 204, 'the deletion succeeds')
    const tokens = [user, ...answers.slice(1).filter((a) => a.statusCode === 200).map((a) => a.json() as Pair)]
    for (const pair of tokens) {
      t.equal(await me(app, pair.accessToken), 401, 'every access token of the account answers 401')
      t.equal((await refresh(app, pair.refreshToken)).statusCode, 401, 'every refresh token of the account answers 401')
    }
  }
  t.notOk(seen.some((s) => s >= 500), 'no 5xx over every trial')
})

async function twoAdmins (handle: DatabaseHandle, a: Pair, b: Pair, app: FastifyInstance) {
  for (const u of [a, b]) {
    await setRole(handle.db, { id: u.user.id }, 'ADMIN')
    app.profiles.invalidate(u.user.id)
  }
}

t.test('two admins demoting each other at once: exactly one wins, the other is the last ADMIN', async (t) => {
  const { app, handle, signIn } = await setup(t)
  const seen: number[] = []
  for (let i = 0; i < TRIALS; i++) {
    const [a, b] = [await signIn(), await signIn()]
    await twoAdmins(handle, a, b, app)
    // Both are admins when their requests are authorized (their profiles read), as when both click at once.
    for (const u of [a, b]) t.equal((await app.inject({ url: '/api/admin/users?limit=1', headers: bearer(u.accessToken) })).statusCode, 200)
    const answers = await Promise.all([
      app.inject({ method: 'PATCH', url: `/api/admin/users/${b.user.id}`, headers: bearer(a.accessToken), payload: { role: 'USER' } }),
      app.inject({ method: 'PATCH', url: `/api/admin/users/${a.user.id}`, headers: bearer(b.accessToken), payload: { role: 'USER' } })
    ])
    const statuses = answers.map((r) => r.statusCode)
    seen.push(...statuses)
    // The loser is refused as the last ADMIN (409) or, when the winner's change had landed before its own
    // request was authorized, as no longer an ADMIN (403): either way exactly one wins.
    const [won, lost] = [...statuses].sort()
    t.ok(won === 200 && (lost === 409 || lost === 403), `trial ${i}: ${statuses.join(',')}`)
    const { rows } = await sql<{ role: string }>`SELECT role FROM users WHERE id IN (${a.user.id}, ${b.user.id})`.execute(handle.db)
    t.same(rows.map((r) => r.role).sort(), ['ADMIN', 'USER'], `trial ${i}: one ADMIN left`)
    // Back to no ADMIN, so the next trial again has exactly two.
    for (const u of [a, b]) await setRole(handle.db, { id: u.user.id }, 'USER')
  }
  t.notOk(seen.some((s) => s >= 500), 'no 5xx over every trial')
})

t.test('a transaction that loses to others is run again, a bounded number of times, and never answered 500', async (t) => {
  const { app, handle } = await setup(t)
  // A sign-in's session insert fails as a serialization failure on its first `fail` attempts; a sequence
  // counts the attempts, whatever their transactions' fate.
  await sql`CREATE SEQUENCE attempts`.execute(handle.db)
  await sql`CREATE TABLE fail (n int)`.execute(handle.db)
  await sql`CREATE FUNCTION lose() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('attempts') <= (SELECT n FROM fail) THEN RAISE EXCEPTION 'lost' USING ERRCODE = 'serialization_failure'; END IF;
      RETURN NEW;
    END $$`.execute(handle.db)
  await sql`CREATE TRIGGER lose BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION lose()`.execute(handle.db)
  const attempts = async () => Number((await sql<{ n: string }>`SELECT last_value AS n FROM attempts`.execute(handle.db)).rows[0]!.n)

  await sql`INSERT INTO fail VALUES (2)`.execute(handle.db)
  t.equal((await app.inject('/api/auth/identity?code=good')).statusCode, 200, 'two losses, then the third attempt commits')
  t.equal(await attempts(), 3)

  await sql`UPDATE fail SET n = 1000`.execute(handle.db)
  const lost = await app.inject('/api/auth/identity?code=good')
  t.same([lost.statusCode, lost.headers['retry-after'], lost.json()], [503, '1', { error: 'Service Unavailable', message: 'The request conflicted with a concurrent one; try again' }],
    'every attempt lost: 503 with Retry-After')
  t.equal(await attempts(), 3 + TRANSACTION_ATTEMPTS, `${TRANSACTION_ATTEMPTS} attempts in all`)
})
