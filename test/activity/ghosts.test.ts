import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import type { ActivityEvent } from '../../lib/activity/event.ts'
import { loadActivity, LoadAborted, type LoadOptions } from '../../db/activity-load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { canReadGuild, ghostsForGuild, type Ghost } from '../../db/activity.ts'
import { seedDemoActivityIfEmpty } from '../../db/sample/activity.ts'
import { DEMO_GUILD_ID, DEMO_USERS } from '../../lib/dev-idp/demo-data.ts'

const G = '900000000000000001'
const OTHER = '900000000000000002'
const ev = (userId: string, type: 'typing' | 'message', createdAt: string, username = `name-${userId}`, guildId = G): ActivityEvent =>
  ({ type, guildId, channelId: 'c1', userId, username, createdAt })
const times = (n: number, f: (i: number) => ActivityEvent) => Array.from({ length: n }, (_, i) => f(i))
async function * iterate (list: ActivityEvent[]) { yield * list }
const load = (handle: DatabaseHandle, list: ActivityEvent[], options?: LoadOptions) => loadActivity(handle, iterate(list), options)
const rows = (ghosts: Ghost[]) => ghosts.map((g) => [g.userId, g.typingCount, g.messageCount, g.ghostScore])
const ghosts = (handle: DatabaseHandle, since: string | null, limit = 100) =>
  ghostsForGuild(handle.db, { guildId: G, since: since === null ? null : new Date(since), limit })

// Days 2025-03-01 (D1), -02 (D2), -03 (D3). Scores: u1 6/(1+1)=3, u0 and u2 3/(0+1)=3 (the tie with
// u1 goes to more typing, u0 before u2 by id), u5 2, u3 4/(3+1)=1 and u6 1/1=1 (more typing first),
// u7 1/(1+1)=0.5; u4 only posts and is left out, as is u9 of another guild.
const events: ActivityEvent[] = [
  ...times(6, (i) => ev('u1', 'typing', `2025-03-01T10:0${i}:00Z`)), ev('u1', 'message', '2025-03-01T11:00:00Z', 'renamed-u1'),
  ...times(3, (i) => ev('u2', 'typing', `2025-03-02T10:0${i}:00Z`)),
  ...times(3, (i) => ev('u0', 'typing', `2025-03-02T12:0${i}:00.000Z`)),
  ...times(4, (i) => ev('u3', 'typing', `2025-03-01T09:0${i}:00Z`)), ...times(3, (i) => ev('u3', 'message', `2025-03-03T09:0${i}:00Z`)),
  ...times(5, (i) => ev('u4', 'message', `2025-03-01T08:0${i}:00Z`)),
  ev('u5', 'typing', '2025-03-02T23:59:59Z'), ev('u5', 'typing', '2025-03-03T01:00:00+01:00'),
  ev('u6', 'typing', '2025-03-03T12:00:00Z'),
  // The later event comes first in the file: the username follows event time, not file order.
  ev('u7', 'typing', '2025-03-03T10:00:00Z', 'new-u7'), ev('u7', 'message', '2025-03-01T10:00:00Z', 'old-u7'),
  ev('u9', 'typing', '2025-03-01T00:00:00Z', 'other', OTHER)
]
const ALL = [['u1', 6, 1, 3], ['u0', 3, 0, 3], ['u2', 3, 0, 3], ['u5', 2, 0, 2], ['u3', 4, 3, 1], ['u6', 1, 0, 1], ['u7', 1, 1, 0.5]]

const counts = async (handle: DatabaseHandle) => (await sql<{ e: number; d: number; u: number }>`SELECT
  (SELECT count(*) FROM activity_events)::int AS e, (SELECT count(*) FROM activity_daily)::int AS d,
  (SELECT count(*) FROM activity_users)::int AS u`.execute(handle.db)).rows[0]
const indexes = async (handle: DatabaseHandle) => (await sql<{ indexname: string }>`SELECT indexname FROM pg_indexes
  WHERE tablename IN ('activity_events', 'activity_daily', 'activity_users') ORDER BY 1`.execute(handle.db)).rows.map((r) => r.indexname)

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`ghost scores on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const summary = await load(handle, events)
    t.match(summary, { events: events.length, typing: 21, messages: 10, guilds: 2, users: 9, days: 3 })
    const all = await ghosts(handle, null)
    t.same(rows(all), ALL, 'score desc, typing desc, user id; no typing or other guild: left out')
    t.same(all.map((g) => g.username), ['renamed-u1', 'name-u0', 'name-u2', 'name-u5', 'name-u3', 'name-u6', 'new-u7'], 'username of the latest event')
    t.same(rows(await ghosts(handle, null, 2)), ALL.slice(0, 2), 'limit')
    t.same(await ghostsForGuild(handle.db, { guildId: 'no-such-guild', limit: 100 }), [])

    t.same(rows(await ghosts(handle, '2025-03-02T10:01:00Z')), [
      ['u0', 3, 0, 3], ['u2', 2, 0, 2], ['u5', 2, 0, 2], ['u6', 1, 0, 1], ['u7', 1, 0, 1]
    ], 'since inside a day: the rest of that day from raw events, later days from the rollup')
    t.same(rows(await ghosts(handle, '2025-03-02T00:00:00Z')), [
      ['u0', 3, 0, 3], ['u2', 3, 0, 3], ['u5', 2, 0, 2], ['u6', 1, 0, 1], ['u7', 1, 0, 1]
    ], 'since at midnight: whole days only')
    t.same(rows(await ghosts(handle, '2025-03-02T23:59:59.500Z')), [['u5', 1, 0, 1], ['u6', 1, 0, 1], ['u7', 1, 0, 1]],
      'a cut inside the last second of a day')
    t.same(rows(await ghosts(handle, '2025-03-02T23:59:59Z')).map((r) => r[0]), ['u5', 'u6', 'u7'])
    t.same((await ghosts(handle, '2025-03-02T23:59:59Z'))[0].typingCount, 2, 'since is inclusive')
    t.same(rows(await ghosts(handle, '2025-03-03T12:00:00.001Z')), [], 'after every typing event')
    t.same(rows(await ghosts(handle, '2030-01-01T00:00:00Z')), [])
    t.same(rows(await ghosts(handle, '2020-06-15T13:14:15Z')), ALL, 'since before all events')

    // A second load adds to the rollups; an older event does not take over the username.
    await load(handle, [ev('u3', 'typing', '2025-03-04T00:00:00Z'), ev('u1', 'typing', '2025-02-01T00:00:00Z', 'older-u1'), ev('u0', 'message', '2025-03-04T08:00:00Z', 'zero')])
    const after = await ghosts(handle, null)
    t.same(after.find((g) => g.userId === 'u3'), { userId: 'u3', username: 'name-u3', typingCount: 5, messageCount: 3, ghostScore: 1.25 })
    t.same(after.find((g) => g.userId === 'u1'), { userId: 'u1', username: 'renamed-u1', typingCount: 7, messageCount: 1, ghostScore: 3.5 })
    t.same(after.find((g) => g.userId === 'u0'), { userId: 'u0', username: 'zero', typingCount: 3, messageCount: 1, ghostScore: 1.5 })
  })

  t.test(`a rollup staged in parts gives the same answers on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    await load(handle, events, { batchSize: 3 })
    t.same(rows(await ghosts(handle, null)), ALL)
    t.same((await ghosts(handle, null)).map((g) => g.username)[6], 'new-u7')
    t.same(rows(await ghosts(handle, '2025-03-02T10:01:00Z')).map((r) => r[0]), ['u0', 'u2', 'u5', 'u6', 'u7'])
    t.same(await counts(handle), { e: events.length, d: 12, u: 9 })
  })

  t.test(`answers equal a brute-force count over raw events on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const source = { guilds: 2, users: 40, events: 4000, seed: 11, end: new Date('2025-06-01T00:00:00Z'), days: 10 }
    await loadActivity(handle, syntheticActivity({ ...source, events: 2500 }))
    // A second, overlapping load exercises the upserts.
    await loadActivity(handle, syntheticActivity({ ...source, seed: 12, events: 1500 }))
    const guild = '700000000000000001'
    const exact = async (since: Date | null) => {
      const { rows } = await sql<{ user_id: string; t: number; m: number; username: string }>`
        SELECT e.user_id, count(*) FILTER (WHERE type = 'typing')::int AS t, count(*) FILTER (WHERE type = 'message')::int AS m,
               (SELECT username FROM activity_users u WHERE u.guild_id = ${guild} AND u.user_id = e.user_id) AS username
        FROM activity_events e WHERE guild_id = ${guild} AND (${since}::timestamptz IS NULL OR created_at >= ${since}::timestamptz)
        GROUP BY e.user_id HAVING count(*) FILTER (WHERE type = 'typing') > 0`.execute(handle.db)
      // Exact ratio comparison by cross-multiplication, then typing count, then id.
      rows.sort((a, b) => b.t * (a.m + 1) - a.t * (b.m + 1) || b.t - a.t || (a.user_id < b.user_id ? -1 : 1))
      return rows.map((r) => ({ userId: r.user_id, username: r.username, typingCount: r.t, messageCount: r.m, ghostScore: r.t / (r.m + 1) }))
    }
    const checks: (string | null)[] = [null, '2025-05-25T00:00:00Z', '2025-05-25T17:42:13.250Z', '2025-05-22T23:00:00+02:00', '2025-05-31T20:00:00Z', '2025-05-20T00:00:00.001Z']
    for (const since of checks) {
      const date = since === null ? null : new Date(since)
      const expected = await exact(date)
      t.ok(expected.length > 0 || since === '2025-05-31T20:00:00Z', `${since}: ${expected.length} ghosts`)
      t.same(await ghostsForGuild(handle.db, { guildId: guild, since: date, limit: 1000 }), expected, `since ${since}`)
    }
    const { rows: [totals] } = await sql<{ d: number; e: number }>`SELECT
      (SELECT sum(typing_count + message_count) FROM activity_daily)::int AS d, (SELECT count(*) FROM activity_events WHERE type IN ('typing', 'message'))::int AS e`.execute(handle.db)
    t.equal(totals.d, totals.e, 'the daily rollup counts every typing and message event once')
  })

  t.test(`a refused load leaves nothing behind on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const before = await indexes(handle)
    async function * failing (list: ActivityEvent[]) {
      yield * list
      throw new LoadAborted('invalid lines')
    }
    await t.rejects(loadActivity(handle, failing(events)), { name: 'LoadAborted' })
    t.same(await counts(handle), { e: 0, d: 0, u: 0 }, 'into empty tables')
    t.same(await indexes(handle), before, 'indexes are back')

    await load(handle, events)
    const loaded = await counts(handle)
    const answer = await ghosts(handle, null)
    await t.rejects(loadActivity(handle, failing([ev('u8', 'typing', '2025-03-05T00:00:00Z'), ...events])), { name: 'LoadAborted' })
    t.same(await counts(handle), loaded, 'into filled tables')
    t.same(await ghosts(handle, null), answer)
    await t.rejects(load(handle, [ev('u8', 'typing', 'not a time')]), /invalid createdAt/)
    t.same(await counts(handle), loaded)

    const replaced = await load(handle, [ev('u8', 'typing', '2025-03-05T00:00:00Z')], { replace: true })
    t.equal(replaced.events, 1)
    t.same(await counts(handle), { e: 1, d: 1, u: 1 }, 'replace empties the tables first')
    t.same(await indexes(handle), before)
  })

  t.test(`guild-scoped permission on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const user = async (providerId: string, guild?: { owner?: boolean; permissions?: string }) => {
      const { id } = await handle.db.insertInto('users').values({ provider_id: providerId, username: `p${providerId}`, discriminator: '1', avatar: null })
        .returning('id').executeTakeFirstOrThrow()
      if (guild) {
        await handle.db.insertInto('user_guilds')
          .values({ user_id: id, guild_id: G, name: 'G', icon: null, owner: guild.owner ?? false, permissions: guild.permissions ?? '0' }).execute()
      }
      return id
    }
    const cases: [string, string, 'USER' | 'ADMIN', boolean][] = [
      ['owner', await user('1', { owner: true }), 'USER', true],
      ['ADMINISTRATOR', await user('2', { permissions: String(0x8) }), 'USER', true],
      ['MANAGE_GUILD among other bits', await user('3', { permissions: String(0x20 | 0x400 | 0x800) }), 'USER', true],
      ['bits above 2^53', await user('4', { permissions: String((1n << 60n) | 0x20n) }), 'USER', true],
      ['plain member', await user('5', { permissions: String(0x400 | 0x800 | 0x10) }), 'USER', false],
      ['not in the guild', await user('6'), 'USER', false],
      ['malformed bit set', await user('7', { permissions: 'lots' }), 'USER', false],
      ['role ADMIN without the guild', await user('8'), 'ADMIN', true]
    ]
    for (const [, userId, role] of cases) await handle.db.updateTable('users').set({ role }).where('id', '=', userId).execute()
    for (const [name, userId, , allowed] of cases) {
      t.equal(await canReadGuild(handle.db, { userId, guildId: G }), allowed, name)
    }
    t.equal(await canReadGuild(handle.db, { userId: cases[0][1], guildId: OTHER }), false, 'owner of another guild only')
    // The stored role as it is now: a demotion applies at once.
    await handle.db.updateTable('users').set({ role: 'USER' }).where('id', '=', cases[7][1]).execute()
    t.equal(await canReadGuild(handle.db, { userId: cases[7][1], guildId: G }), false, 'demoted: refused at once')
    t.equal(await canReadGuild(handle.db, { userId: '00000000-0000-0000-0000-000000000000', guildId: G }), false, 'unknown user')
  })
}

t.test('the embedded start seeds demo activity once, ending now', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  const started = Date.now()
  await buildTestApp(t, handle, {}, { SEED_SAMPLE_DATA: 'true' })
  t.ok(Date.now() - started < 15_000, 'in a few seconds')
  t.equal(await seedDemoActivityIfEmpty(handle), null, 'not again once there is activity')
  const { rows } = await sql<{ username: string }>`SELECT username FROM activity_users WHERE guild_id = ${DEMO_GUILD_ID} ORDER BY user_id`.execute(handle.db)
  t.same(rows.slice(0, DEMO_USERS.length).map((r) => r.username), DEMO_USERS.map((u) => u.username), 'the demo users are members')
  const all = await ghostsForGuild(handle.db, { guildId: DEMO_GUILD_ID, limit: 1000 })
  t.ok(all.length >= 20, `${all.length} ghosts in the demo guild`)
  const lastWeek = await ghostsForGuild(handle.db, { guildId: DEMO_GUILD_ID, since: new Date(Date.now() - 7 * 86_400_000), limit: 1000 })
  t.ok(lastWeek.length > 0 && lastWeek.length <= all.length, `${lastWeek.length} ghosts in the last week`)
})
