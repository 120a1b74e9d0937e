import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, dbKinds, openTestDatabase, unmigratedDatabase } from '../helper.ts'
import { guildSignIn } from '../support/activity.ts'
import { StandInIdp, type StandInGuild } from '../support/idp-server.ts'
import type { ActivityEvent } from '../../lib/activity/event.ts'
import { loadActivity, loadBatch } from '../../db/activity-load.ts'
import { guildTotals, overviewChannels, overviewDays } from '../../db/dashboard.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { setRole } from '../../db/auth.ts'
import { migrations } from '../../db/migrations/index.ts'
import { sql } from '../../db/kysely.ts'
import { Oracle } from './oracle.ts'

// A generated month across both DST ends of 2025 (Europe 26 October, United States 2 November), and a guild
// made by hand around Paris's two DST changes, local midnights in several zones, quarter-hour edges and a
// quiet week (days without events).
const G = '700000000000000001'
const G2 = '710000000000000001'
const H = '910000000000000001'
const END = Date.parse('2025-11-10T00:00:00Z')
const generated = [...syntheticActivity({ guilds: 2, users: 40, events: 6000, seed: 5, end: new Date(END), days: 30 })]
let n = 0
const ev = (createdAt: string, o: Partial<ActivityEvent> = {}): ActivityEvent =>
  ({ type: 'message', guildId: H, channelId: 'c1', userId: `u${n++ % 7}`, username: 'hand', createdAt, ...o } as ActivityEvent)
const hand: ActivityEvent[] = [
  // Paris, spring: 2025-03-30 is 23 hours long (02:00 local does not happen).
  ev('2025-03-29T22:59:59.999Z'), ev('2025-03-29T23:00:00.000Z', { type: 'typing' }), ev('2025-03-30T00:59:00Z', { type: 'presence', channelId: undefined, status: 'online', clients: ['web'] }),
  ev('2025-03-30T01:00:00Z', { type: 'reaction', latencyMs: 5 }), ev('2025-03-30T21:59:59.999Z', { type: 'join', channelId: undefined }), ev('2025-03-30T22:00:00Z', { type: 'leave', channelId: undefined }),
  // Paris, autumn: 2025-10-26 is 25 hours long (02:30 local happens twice).
  ev('2025-10-25T21:59:59Z', { channelId: 'c\u{FF21}' }), ev('2025-10-25T22:00:00Z', { channelId: 'c\u{1F600}' }), ev('2025-10-26T00:30:00Z', { type: 'message_delete' }),
  ev('2025-10-26T01:30:00Z', { type: 'role_change', channelId: undefined, roleId: 'r', change: 'added' }), ev('2025-10-26T22:59:59.999Z', { channelId: 'c\u{FF21}' }),
  ev('2025-10-26T23:00:00Z', { channelId: 'c\u{1F600}' }),
  // Kathmandu (+05:45) and St John's (-03:30) midnights; quarter-hour edges.
  ev('2025-10-27T18:14:59.999Z', { type: 'typing' }), ev('2025-10-27T18:15:00Z', { type: 'typing' }), ev('2025-10-28T03:29:59.999Z'), ev('2025-10-28T03:30:00Z'),
  ev('2025-10-28T10:14:59.999Z', { type: 'reaction' }), ev('2025-10-28T10:15:00Z', { type: 'reaction' }), ev('2025-10-28T10:29:59.999Z'),
  // Then a quiet week.
  ev('2025-11-05T12:00:00Z', { userId: 'late', username: 'late-one' })
]
const events = [...generated, ...hand]
const oracle = new Oracle(events)

const windows: [string, string][] = [
  ['2025-10-20T13:17:00.250Z', '2025-11-05T07:00:00Z'],
  ['2025-10-25T22:00:00Z', '2025-10-28T00:00:00Z'],
  ['2025-03-29T00:00:00Z', '2025-04-01T00:00:00Z'],
  ['2025-10-26T00:07:00Z', '2025-10-26T00:11:00Z'],
  ['2025-10-28T10:07:00Z', '2025-10-28T10:31:00Z'],
  ['2025-10-12T00:00:00Z', '2025-11-10T00:00:00Z'],
  ['2030-01-01T00:00:00Z', '2030-01-03T00:00:00Z']
]
const zones = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Chatham']

for (const kind of dbKinds) {
  t.test(`the dashboard's guilds and overview equal the figures computed from the raw events (${kind})`, async (t) => {
    const idp = await new StandInIdp().start()
    t.teardown(() => idp.stop())
    const handle = await openTestDatabase(t, kind)
    // Loads merging into the rollups the earlier ones made: through the staging table and in API batches (one sent twice).
    await loadActivity(handle, events.slice(0, 3000))
    for (let i = 3000; i < events.length; i += 1000) await loadBatch(handle, events.slice(i, i + 1000))
    t.match(await loadBatch(handle, events.slice(3000, 4000)), { events: 0, duplicates: 1000 }, 'a batch sent again stores nothing')
    // The loads keep activity_day_edges as 024 computes it from the quarter masks they merged.
    const edges = async () => (await sql<Record<string, unknown>>`SELECT guild_id, to_char(day, 'YYYY-MM-DD') AS day, quarter, first_count, last_count, straddle_count
      FROM activity_day_edges WHERE first_count <> 0 OR last_count <> 0 OR straddle_count <> 0 ORDER BY 1, 2, 3`.execute(handle.db)).rows
    const kept = await edges()
    t.ok(kept.length > 500 && kept.some((r) => r.straddle_count !== 0), `${kept.length} edge rows, members across midnight among them`)
    await migrations['024_activity_day_edges']!.down!(handle.db as never)
    await migrations['024_activity_day_edges']!.up(handle.db as never)
    t.same(kept, await edges(), 'the loads\' edges equal those filled from activity_daily')

    const app: FastifyInstance = await buildTestApp(t, handle, {}, idp.env())
    const signIn = guildSignIn(t, app, idp)
    const guild = (id: string, o: Partial<StandInGuild> = {}): StandInGuild => ({ id, name: `name-${id}`, icon: null, owner: false, permissions: '0', ...o })
    const E = '920000000000000001'
    const X = '930000000000000001'
    const owner = await signIn('1', [guild(G, { owner: true, icon: 'i1' }), guild(H, { permissions: '32' }), guild(X, { permissions: String(0x400) }), guild(E, { permissions: '8' })])
    const ask = async (path: string, query: Record<string, string | number | undefined>, token = owner) => {
      const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))
      const res = await app.inject({ url: `${path}?${q}`, headers: { authorization: `Bearer ${token}` } })
      return { status: res.statusCode, body: res.json() }
    }

    t.test('GET /api/guilds', async (t) => {
      const entry = (id: string, name: string | null, icon: string | null = null) => ({ guildId: id, name, icon, ...oracle.guildTotals(id) })
      const mine = [entry(G, `name-${G}`, 'i1'), entry(H, `name-${H}`), entry(E, `name-${E}`)]
      t.same(await ask('/api/guilds', {}), { status: 200, body: { guilds: mine, count: 3 } }, 'the guilds of the list that pass the rule, busiest first; X (no permission) left out')
      t.equal(mine[2]!.events, 0)
      t.equal(mine[2]!.lastEventAt, null, 'a guild without events: 0 and null')
      t.same((await ask('/api/guilds', { limit: 2 })).body, { guilds: mine.slice(0, 2), count: 2 }, 'limit')
      await signIn('6', [guild(X)])
      await setRole(handle.db, '6', 'ADMIN')
      const admin = await signIn('6', [guild(X)])
      const every = [entry(G, null), entry(G2, null), entry(H, null), entry(X, `name-${X}`)]
      t.same((await ask('/api/guilds', {}, admin)).body, { guilds: every, count: 4 }, 'an ADMIN: every guild with events, and those of their list')
      t.same((await ask('/api/guilds', { limit: 1001 })), { status: 400, body: { error: 'Bad Request', message: 'querystring/limit must be <= 1000' } })
      t.equal((await app.inject('/api/guilds')).statusCode, 401)
    })

    t.test('GET /api/overview in several time zones, across DST changes, with empty days', async (t) => {
      for (const g of [G, H]) {
        for (const [since, until] of windows) {
          for (const timeZone of zones) {
            const expected = oracle.overview(g, Date.parse(since), Date.parse(until), timeZone, 1000)
            t.same(await ask('/api/overview', { guildId: g, since, until, timeZone, limit: 1000 }), {
              status: 200,
              body: { guildId: g, since: new Date(since).toISOString(), until: new Date(until).toISOString(), timeZone, ...expected }
            }, `${g} ${timeZone} [${since}, ${until})`)
          }
        }
      }
      const paris = (await ask('/api/overview', { guildId: H, since: '2025-10-25T22:00:00Z', until: '2025-11-03T23:00:00Z', timeZone: 'Europe/Paris' })).body
      t.same(paris.days.map((d: { date: string }) => d.date).slice(0, 3), ['2025-10-26', '2025-10-27', '2025-10-28'], 'local dates')
      t.same(paris.days.slice(0, 2).map((d: { events: number }) => d.events), [4, 3], 'the 25-hour day holds its four events')
      t.ok(paris.days.slice(3).every((d: { events: number; members: number }) => d.events === 0 && d.members === 0), 'the quiet week: every date, each empty')
      t.equal(paris.days.length, 9)
      const spring = (await ask('/api/overview', { guildId: H, since: '2025-03-29T23:00:00Z', until: '2025-03-30T22:00:00Z', timeZone: 'Europe/Paris' })).body
      t.same(spring.days.map((d: { date: string; events: number }) => [d.date, d.events]), [['2025-03-30', 4]], 'the 23-hour day')
      const ties = (await ask('/api/overview', { guildId: H, since: '2025-10-25T00:00:00Z', until: '2025-10-27T00:00:00Z', limit: 2 })).body.channels
      t.same(ties.map((c: { channelId: string }) => c.channelId), ['c\u{FF21}', 'c\u{1F600}'], 'equal channels: byte order of the ids')
      t.same((await ask('/api/overview', { guildId: G, since: windows[0]![0], until: windows[0]![1], limit: 2 })).body.channels,
        oracle.overview(G, Date.parse(windows[0]![0]), Date.parse(windows[0]![1]), 'UTC', 2).channels, 'limit: the busiest channels')

      const now = await ask('/api/overview', { guildId: G })
      t.equal(now.status, 200)
      t.equal(Date.parse(now.body.until) - Date.parse(now.body.since), 30 * 86_400_000, 'since defaults to 30 days before until, echoed')
      t.equal(now.body.timeZone, 'UTC')
      t.ok(now.body.days.length >= 30 && now.body.days.length <= 31, 'every UTC date of the 30 days')
      t.same((await ask('/api/overview', { guildId: G, until: '2025-11-10T00:00:00Z' })).body.totals,
        oracle.overview(G, END - 30 * 86_400_000, END, 'UTC', 100).totals, 'the default window up to until')
    })

    t.test('the common rules', async (t) => {
      const member = await signIn('7', [guild(G, { permissions: String(0x400) })])
      t.same(await ask('/api/overview', { guildId: G }, member), { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } })
      t.same(await ask('/api/overview', {}), { status: 400, body: { error: 'Bad Request', message: 'querystring must have required property \'guildId\'' } })
      t.same(await ask('/api/overview', { guildId: G, since: '2024-01-01T00:00:00Z', until: '2025-02-04T00:00:00.001Z' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since: the window from since to until must be at most 400 days' } })
      t.equal((await ask('/api/overview', { guildId: G, since: '2024-01-01T00:00:00Z', until: '2025-02-04T00:00:00Z' })).status, 200, 'exactly 400 days')
      t.same(await ask('/api/overview', { guildId: G, since: '2025-11-01T00:00:00Z', until: '2025-11-01T00:00:00Z' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since must be before until' } })
      t.same(await ask('/api/overview', { guildId: G, until: '2025-01-01T00:00:00Z', since: 'tomorrow' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since must be an ISO 8601 date-time' } })
      for (const timeZone of ['Mars/Olympus', '+02:00', 'UTC+3']) {
        t.same(await ask('/api/overview', { guildId: G, timeZone }), { status: 400, body: { error: 'Bad Request', message: `querystring/timeZone: unknown time zone ${JSON.stringify(timeZone)}` } })
      }
      t.equal((await ask('/api/overview', { guildId: G, limit: 0 })).status, 400)
      t.equal((await app.inject(`/api/overview?guildId=${G}`)).statusCode, 401)
      const unknown = await ask('/api/overview', { guildId: '123', since: '2025-10-01T00:00:00Z', until: '2025-10-03T00:00:00Z' }, owner)
      t.same(unknown.status, 403, 'a guild outside the caller\'s list')
    })
  })
}

// 021 and 024 fill their rollups from the stored events, and their down steps take them away again.
for (const kind of dbKinds) {
  t.test(`021 and 024 fill the dashboard's rollups from stored events on ${kind}`, async (t) => {
    const { handle, step } = await unmigratedDatabase(t, kind)
    const names = Object.keys(migrations)
    await step(names[names.length - 1]!)
    await loadActivity(handle, hand)
    await step('020_placemark_box_index_only')
    await step('021_activity_overview')
    await step(names[names.length - 1]!)
    for (const [since, until] of windows.slice(0, 5)) {
      const expected = oracle.overview(H, Date.parse(since), Date.parse(until), 'Europe/Paris', 100)
      const got = await overviewDays(handle.db, { guildId: H, since: Date.parse(since), until: Date.parse(until), timeZone: 'Europe/Paris' })
      t.same(got.days, expected.days, `days [${since}, ${until})`)
      t.equal(got.members, expected.totals.members)
      t.same(await overviewChannels(handle.db, { guildId: H, since: Date.parse(since), until: Date.parse(until), limit: 100 }), expected.channels)
    }
    t.same(await guildTotals(handle.db, { guildIds: [], everyGuild: true, limit: 10 }), [{ guildId: H, ...oracle.guildTotals(H) }])
  })
}
