/**
 * The embedded database's contract: the same migrations, repositories and routes answer the same on
 * PGlite as on PostgreSQL. Every other test file runs on PostgreSQL; here the two run side by side on
 * the same data and every answer is compared, byte for byte where the data allow it.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, importVegas, openTestDatabase, vegasAbsent, type DbKind } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { loadActivity } from '../../db/activity-load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { ghostsForGuild } from '../../db/activity.ts'
import { pruneAuthRecords } from '../../db/auth.ts'
import type { DatabaseHandle } from '../../db/index.ts'

const kinds: DbKind[] = ['postgres', 'pglite']

// What differs between two imports of the same file: the import's own time, and the ETag that hashes it.
const normalized = (body: string) => body.replace(/"created_at":"[^"]+"/g, '"created_at":"…"')

async function sameAnswers (t: Test, apps: FastifyInstance[], requests: (string | InjectOptions)[]): Promise<void> {
  for (const request of requests) {
    const [first, ...rest] = await Promise.all(apps.map((app) => app.inject(request)))
    const label = typeof request === 'string' ? request : `${request.method ?? 'GET'} ${request.url}`
    for (const other of rest) {
      t.equal(other.statusCode, first!.statusCode, `${label}: the same status`)
      t.equal(normalized(other.body), normalized(first!.body), `${label}: the same body`)
      t.equal(other.headers['content-type'], first!.headers['content-type'], `${label}: the same type`)
    }
  }
}

t.test('the placemark API: the sample and the Vegas dataset answer the same on both, the box query on both of its paths', async (t) => {
  const handles = await Promise.all(kinds.map((kind) => openTestDatabase(t, { kind, sample: true })))
  // PostgreSQL's database path, PGlite's database path, PGlite's in-memory box index.
  const apps = [await buildTestApp(t, handles[0]!, { BBOX_INDEX_MB: 0 }), await buildTestApp(t, handles[1]!, { BBOX_INDEX_MB: 0 }), await buildTestApp(t, handles[1]!)]
  await apps[2]!.boxIndex.idle()
  t.equal(apps[2]!.boxIndex.state(), 'ready')
  const boxes = ['min_lon=-115.18&min_lat=36.08&max_lon=-115.16&max_lat=36.12', 'min_lon=-180&min_lat=-90&max_lon=180&max_lat=90',
    'min_lon=170&min_lat=-90&max_lon=-170&max_lat=90', 'min_lon=-115.3&min_lat=36.0&max_lon=-115.0&max_lat=36.3&limit=5']
  const urls = ['/api/v1/placemarks', '/api/v1/placemarks?limit=7&offset=3', '/api/v1/placemarks?folder=Downtown', '/api/v1/placemarks/1', '/api/v1/placemarks/999999',
    '/api/v1/placemarks/2?format=geojson', '/api/v1/timeline', '/api/v1/timeline/events', '/api/v1/folders', '/api/v1/stats',
    ...boxes.map((b) => `/api/v1/spatial/bbox?${b}`), ...boxes.map((b) => `/api/v1/spatial/bbox?${b}&format=geojson`), '/api/v1/placemarks?limit=0']
  await sameAnswers(t, apps, urls)

  if (vegasAbsent) {
    t.comment(`the Vegas part is skipped: ${vegasAbsent}`)
    return
  }
  await Promise.all(handles.map((handle) => importVegas(handle)))
  for (const app of apps) await app.datasetVersion.refresh()
  await apps[2]!.boxIndex.idle()
  await sameAnswers(t, apps, [...urls, '/api/v1/placemarks?limit=1000', '/api/v1/spatial/bbox?min_lon=-115.2&min_lat=36.0&max_lon=-115.1&max_lat=36.2&limit=10000'])
})

t.test('sign-in, rotation, reuse, sessions and logout behave the same on both', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  for (const kind of kinds) {
    const handle = await openTestDatabase(t, kind)
    // A replay right after the rotation is theft here (no grace window); the window is checked below.
    const app = await buildTestApp(t, handle, { REFRESH_REUSE_GRACE: '0' }, idp.env())
    const signIn = await app.inject('/api/auth/identity?code=good')
    t.equal(signIn.statusCode, 200, `${kind}: signed in`)
    const { accessToken, refreshToken, user } = signIn.json() as { accessToken: string; refreshToken: string; user: { providerId: string } }
    t.equal(user.providerId, idp.user.id)
    const bearer = { authorization: `Bearer ${accessToken}` }
    t.same((await app.inject({ url: '/api/auth/me', headers: bearer })).json().guilds.map((g: { id: string }) => g.id), ['900000000000000001'], `${kind}: the guild list`)
    const rotated = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
    t.equal(rotated.statusCode, 200, `${kind}: rotated`)
    const next = rotated.json() as { accessToken: string; refreshToken: string }
    const sessions = (await app.inject({ url: '/api/auth/sessions', headers: { authorization: `Bearer ${next.accessToken}` } })).json().sessions
    t.equal(sessions.length, 1)
    t.equal(sessions[0].current, true)
    t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })).statusCode, 401, `${kind}: a spent token is refused`)
    t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${next.accessToken}` } })).statusCode, 401, `${kind}: and its session is revoked`)
    const again = (await app.inject('/api/auth/identity?code=good')).json() as { accessToken: string }
    const headers = { authorization: `Bearer ${again.accessToken}` }
    t.equal((await app.inject({ method: 'DELETE', url: `/api/auth/sessions/${sessions[0].id}`, headers })).statusCode, 204, `${kind}: revoking an ended session of one's own`)
    t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout', headers })).statusCode, 204)
    t.equal((await app.inject({ url: '/api/auth/me', headers })).statusCode, 401, `${kind}: logged out`)
    // Retention deletes ended sessions and their refresh-token records.
    await sql`UPDATE sessions SET revoked_at = now() - interval '60 days', expires_at = now() - interval '60 days'`.execute(handle.db)
    await sql`UPDATE refresh_tokens SET expires_at = now() - interval '60 days'`.execute(handle.db)
    t.same(await pruneAuthRecords(handle.db, 30 * 86_400_000, 1), { sessions: 2, refreshTokens: 0 }, `${kind}: retention, in batches of one (the sessions take their refresh tokens with them)`)
    t.equal(Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM refresh_tokens`.execute(handle.db)).rows[0]!.n), 0)
  }
})

t.test('sign out everywhere, the grace window, the history, the admin API and account deletion answer the same on both', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const outcomes: unknown[] = []
  for (const kind of kinds) {
    const handle = await openTestDatabase(t, kind)
    const app = await buildTestApp(t, handle, {}, idp.env())
    const auth = (token: string) => ({ authorization: `Bearer ${token}` })
    const one = (await app.inject('/api/auth/identity?code=good')).json() as { accessToken: string; refreshToken: string; user: { id: string } }
    const two = (await app.inject('/api/auth/identity?code=good')).json() as { accessToken: string; refreshToken: string }
    const tabs = await Promise.all([1, 2].map(() => app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: two.refreshToken } })))
    const out: unknown[] = [tabs.map((r) => r.statusCode)]
    out.push((await app.inject({ method: 'DELETE', url: '/api/auth/sessions?scope=others', headers: auth(one.accessToken) })).statusCode)
    out.push((await app.inject({ url: '/api/auth/me', headers: auth(tabs[0]!.json().accessToken) })).statusCode)
    const history = (await app.inject({ url: '/api/auth/history?limit=3', headers: auth(one.accessToken) })).json() as { events: { type: string }[]; nextCursor: string | null }
    out.push(history.events.map((e) => e.type), history.nextCursor !== null)
    await sql`UPDATE users SET role = 'ADMIN'`.execute(handle.db)
    app.profiles.invalidate(one.user.id)
    out.push((await app.inject({ url: '/api/admin/users?q=TEST', headers: auth(one.accessToken) })).json().users.length)
    out.push((await app.inject({ method: 'PATCH', url: `/api/admin/users/${one.user.id}`, headers: auth(one.accessToken), payload: { role: 'USER' } })).statusCode)
    out.push((await app.inject({ url: '/api/auth/me/export', headers: auth(one.accessToken) })).json().sessions.length)
    out.push((await app.inject({ method: 'DELETE', url: '/api/auth/me', headers: auth(one.accessToken) })).statusCode)
    out.push((await app.inject({ url: '/api/auth/me', headers: auth(one.accessToken) })).statusCode)
    out.push(Number((await sql<{ n: number }>`SELECT count(*)::int AS n FROM audit WHERE type = 'account_deleted' AND user_id IS NULL`.execute(handle.db)).rows[0]!.n))
    outcomes.push(out)
  }
  t.same(outcomes[0], [[200, 200], 204, 401, ['session_revoked', 'signout_all', 'refresh_replay'], true, 1, 409, 2, 204, 401, 1], 'PostgreSQL')
  t.same(outcomes[1], outcomes[0], 'PGlite answers the same')
})

t.test('activity loads and ghosts are the same on both', async (t) => {
  const handles: DatabaseHandle[] = await Promise.all(kinds.map((kind) => openTestDatabase(t, kind)))
  const options = { guilds: 3, users: 40, events: 6000, seed: 11, end: new Date('2026-01-01T00:00:00Z') }
  const summaries = await Promise.all(handles.map((handle) => loadActivity(handle, syntheticActivity(options), { batchSize: 500 })))
  t.same({ ...summaries[1], seconds: 0, eventsPerSecond: 0 }, { ...summaries[0], seconds: 0, eventsPerSecond: 0 }, 'the same load summary')
  const guildId = '700000000000000001'
  for (const since of [null, new Date('2025-12-20T00:00:00Z'), new Date('2025-12-20T13:45:00Z'), new Date('2030-01-01T00:00:00Z')]) {
    const [onPostgres, onPglite] = await Promise.all(handles.map((handle) => ghostsForGuild(handle.db, { guildId, since, limit: 1000 })))
    t.same(onPglite, onPostgres, `ghosts since ${since?.toISOString() ?? 'the beginning'}`)
  }
})
