import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { randomUUID } from 'node:crypto'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { pruneAuthRecords } from '../../db/auth.ts'

const DAY = 86_400_000

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`retention deletes ended sessions and expired refresh records on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const { db } = handle
    const { id: userId } = await db.insertInto('users').values({ provider_id: 'r1', username: 'r', discriminator: '0', avatar: null }).returning('id').executeTakeFirstOrThrow()
    const ago = (days: number) => new Date(Date.now() - days * DAY)
    const session = async (name: string, expires: Date, revoked: Date | null) => {
      const id = randomUUID()
      await db.insertInto('sessions').values({ id, user_id: userId, expires_at: expires, revoked_at: revoked, created_at: ago(60), user_agent: name, ip: null }).execute()
      return id
    }
    const expiredLongAgo = await session('expired 40 days ago', ago(40), null)
    const revokedLongAgo = await session('revoked 40 days ago', ago(-3), ago(40))
    const expiredRecently = await session('expired 10 days ago', ago(10), null)
    const live = await session('live', ago(-3), null)
    const token = (hash: string, sessionId: string, expires: Date, rotated: Date | null) =>
      db.insertInto('refresh_tokens').values({ token_hash: hash, session_id: sessionId, expires_at: expires, rotated_at: rotated }).execute()
    await token('gone-with-session', expiredLongAgo, ago(40), null)
    await token('old-spent', live, ago(35), ago(36))
    await token('spent-recent', live, ago(-2), ago(1))
    await token('current', live, ago(-3), null)

    const deleted = await pruneAuthRecords(db, 30 * DAY, 1)
    t.same(deleted, { sessions: 2, refreshTokens: 1 })
    const sessions = (await db.selectFrom('sessions').select('id').execute()).map((r) => r.id).sort()
    t.same(sessions, [expiredRecently, live].sort(), 'sessions ended within the retention stay')
    t.notOk(sessions.includes(revokedLongAgo))
    const tokens = (await db.selectFrom('refresh_tokens').select('token_hash').orderBy('token_hash').execute()).map((r) => r.token_hash)
    t.same(tokens, ['current', 'spent-recent'], 'a spent record stays until its expiry passes the retention')
    t.same(await pruneAuthRecords(db, 30 * DAY), { sessions: 0, refreshTokens: 0 }, 'a second run deletes nothing')
  })
}

t.test('a session ends SESSION_MAX_AGE after its sign-in however often it is refreshed', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  const app = await buildTestApp(t, handle, { SESSION_MAX_AGE: '3s' }, idp.env())
  const signIn = await app.inject('/api/auth/identity?code=ok')
  t.equal(signIn.statusCode, 200)
  let refreshToken = signIn.json().refreshToken as string
  const stored = await handle.db.selectFrom('sessions').select(['created_at', 'expires_at']).executeTakeFirstOrThrow()
  t.ok(stored.expires_at.getTime() - stored.created_at.getTime() <= 3100, 'the session expires with its absolute lifetime')
  const refresh = () => app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
  const first = await refresh()
  t.equal(first.statusCode, 200, 'refreshed within the lifetime')
  refreshToken = first.json().refreshToken
  await new Promise((resolve) => setTimeout(resolve, 3200))
  const late = await refresh()
  t.same([late.statusCode, late.json()], [401, { error: 'Unauthorized', message: 'Invalid refresh token' }], 'refused past the lifetime: sign in again')
  const age = await sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions WHERE expires_at > now()`.execute(handle.db)
  t.equal(age.rows[0].n, 0, 'no live session left')
})
