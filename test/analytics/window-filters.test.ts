import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, dbKinds, openTestDatabase } from '../helper.ts'
import { guildSignIn } from '../support/activity.ts'
import { StandInIdp, type StandInGuild } from '../support/idp-server.ts'
import type { ActivityEvent } from '../../lib/activity/event.ts'
import { loadActivity, loadBatch } from '../../db/activity-load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { Oracle } from './oracle.ts'

// `until` on /api/ghosts and `userId` on /api/suspicion, against the figures computed from the raw events:
// a generated month, and a guild made by hand around a window's edges (an event at since, one at until,
// partial days at both ends, a member whose ghost score depends on the window).
const G = '700000000000000001'
const H = '910000000000000002'
const END = Date.parse('2025-11-10T00:00:00Z')
const generated = [...syntheticActivity({ guilds: 2, users: 40, events: 6000, seed: 33, end: new Date(END), days: 30 })]
const ev = (createdAt: string, userId: string, type: 'typing' | 'message' | 'presence' | 'message_delete' = 'typing'): ActivityEvent =>
  (type === 'presence'
    ? { type, guildId: H, userId, username: `n-${userId}`, createdAt, status: 'online', clients: ['web', 'mobile'] }
    : { type, guildId: H, channelId: 'c1', userId, username: `n-${userId}`, createdAt }) as ActivityEvent
const hand: ActivityEvent[] = [
  ev('2025-10-01T10:00:00Z', 'edge'), ev('2025-10-01T09:59:59.999Z', 'edge', 'message'),
  ev('2025-10-02T00:00:00Z', 'edge'), ev('2025-10-03T23:59:59.999Z', 'edge'), ev('2025-10-04T00:00:00Z', 'edge', 'message'),
  ev('2025-10-02T12:00:00Z', 'z'), ev('2025-10-02T12:00:01Z', 'z'), ev('2025-10-02T12:00:02Z', 'z', 'message'),
  ev('2025-10-03T08:00:00Z', 'B'), ev('2025-10-03T08:00:00Z', 'B'), ev('2025-10-03T09:00:00Z', 'B', 'message_delete'),
  ev('2025-10-03T09:30:00Z', 'B', 'presence'), ev('2025-10-05T00:00:00Z', 'late')
]
const events = [...generated, ...hand]
const oracle = new Oracle(events)

// [since, until): partial days at both ends, whole days, one partial day, an open start, a window without events.
const windows: [string | null, string][] = [
  ['2025-10-20T13:17:00.250Z', '2025-11-05T07:00:00Z'],
  ['2025-10-12T00:00:00Z', '2025-11-10T00:00:00Z'],
  ['2025-11-01T08:00:00Z', '2025-11-01T21:30:00Z'],
  [null, '2025-10-25T06:00:00Z'],
  ['2025-10-01T10:00:00Z', '2025-10-04T00:00:00Z'],
  ['2025-10-01T09:59:59.999Z', '2025-10-03T23:59:59.999Z'],
  ['2030-01-01T00:00:00Z', '2030-02-01T00:00:00Z']
]
const iso = (s: string | null) => (s === null ? null : new Date(s).toISOString())
const ms = (s: string | null) => (s === null ? null : Date.parse(s))

for (const kind of dbKinds) {
  t.test(`ghosts with until, and one member's suspicion, equal the figures computed from the raw events (${kind})`, async (t) => {
    const idp = await new StandInIdp().start()
    t.teardown(() => idp.stop())
    const handle = await openTestDatabase(t, kind)
    // Through the staging table, then in the ingestion API's batches: the rollups merge.
    await loadActivity(handle, events.slice(0, 3000))
    for (let i = 3000; i < events.length; i += 1000) await loadBatch(handle, events.slice(i, i + 1000))
    const app: FastifyInstance = await buildTestApp(t, handle, {}, idp.env())
    const signIn = guildSignIn(t, app, idp)
    const guild = (id: string, o: Partial<StandInGuild> = {}): StandInGuild => ({ id, name: 'G', icon: null, owner: false, permissions: '0', ...o })
    const QUIET = '920000000000000009'
    const owner = await signIn('1', [guild(G, { owner: true }), guild(H, { permissions: '32' }), guild(QUIET, { permissions: '8' })])
    const member = await signIn('2', [guild(G, { permissions: String(0x400) })])
    const ask = async (path: string, query: Record<string, string | number | undefined | null>, token = owner) => {
      const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => [k, String(v)]))
      const res = await app.inject({ url: `${path}?${q}`, headers: { authorization: `Bearer ${token}` } })
      return { status: res.statusCode, body: res.json() }
    }

    t.test('GET /api/ghosts?until=', async (t) => {
      for (const g of [G, H]) {
        for (const [since, until] of windows) {
          const expected = oracle.ghosts(g, ms(since), ms(until)!, 1000)
          t.same(await ask('/api/ghosts', { guildId: g, since, until, limit: 1000 }),
            { status: 200, body: { guildId: g, since: iso(since), until: iso(until), ghosts: expected, count: expected.length } }, `${g} [${since}, ${until}): ${expected.length} ghosts`)
        }
      }
      t.ok(oracle.ghosts(G, ms(windows[0]![0]), ms(windows[0]![1])!, 1000).length > 10, 'the generated month has ghosts')
      // The window's edges: `edge` types at 10:00 on the 1st (in) and the 3rd's last instant (out of the second window).
      const [first, second] = [windows[4]!, windows[5]!]
      const edge = async ([since, until]: [string | null, string]) => (await ask('/api/ghosts', { guildId: H, since, until })).body.ghosts.find((x: { userId: string }) => x.userId === 'edge')
      t.match(await edge(first), { typingCount: 3, messageCount: 0, ghostScore: 3 }, 'since is in the window, until is not')
      t.match(await edge(second), { typingCount: 2, messageCount: 1, ghostScore: 1 }, 'one millisecond earlier: the message in, the last typing out')
      t.same((await ask('/api/ghosts', { guildId: G, since: windows[0]![0], until: windows[0]![1], limit: 3 })).body.ghosts,
        oracle.ghosts(G, ms(windows[0]![0]), ms(windows[0]![1])!, 3), 'limit keeps the highest scores')

      // Without until: no end and no until in the answer, as before.
      const open = await ask('/api/ghosts', { guildId: H, since: '2025-10-02T00:00:00Z' })
      t.same(open.body, { guildId: H, since: '2025-10-02T00:00:00.000Z', ghosts: oracle.ghosts(H, Date.parse('2025-10-02T00:00:00Z'), Infinity, 100), count: open.body.count }, 'without until: every event from since on, no until echoed')
      t.notOk('until' in open.body)

      // The common rules of the window.
      t.same(await ask('/api/ghosts', { guildId: G, since: '2025-11-01T00:00:00Z', until: '2025-11-01T00:00:00Z' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since must be before until' } }, 'since >= until')
      t.same(await ask('/api/ghosts', { guildId: G, until: 'tomorrow' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/until must be an ISO 8601 date-time' } }, 'a malformed until')
      t.equal((await ask('/api/ghosts', { guildId: G, until: '2025-11-01' })).body.until, '2025-11-01T00:00:00.000Z', 'a date alone is its midnight UTC')
      t.equal((await ask('/api/ghosts', { guildId: G, until: '2025-11-01T02:00:00+02:00' })).body.until, '2025-11-01T00:00:00.000Z', 'an offset is applied')
      t.equal((await ask('/api/ghosts', { guildId: G, until: 'x'.repeat(65) })).status, 400, 'until past 64 characters')
      t.same(await ask('/api/ghosts', { guildId: G, until: '2025-11-01T00:00:00Z' }, member),
        { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, 'the guild rule')
      t.same((await ask('/api/ghosts', { guildId: QUIET, until: '2025-11-01T00:00:00Z' })).body, { guildId: QUIET, since: null, until: '2025-11-01T00:00:00.000Z', ghosts: [], count: 0 }, 'a guild without events: empty')
    })

    t.test('GET /api/suspicion?userId=', async (t) => {
      const someone = [...new Set(oracle.guild(G).map((e) => e.userId))].slice(0, 4)
      for (const [since, until] of windows) {
        for (const [g, userId] of [...someone.map((u) => [G, u]), [H, 'B'], [H, 'edge'], [H, 'late']] as const) {
          for (const minScore of [0, 30]) {
            const expected = oracle.suspicion(g, ms(since), ms(until)!, minScore, 1000).filter((m) => m.userId === userId)
            t.same(await ask('/api/suspicion', { guildId: g, since, until, minScore, userId }),
              { status: 200, body: { guildId: g, since: iso(since), until: iso(until), members: expected } }, `${userId} >= ${minScore} [${since}, ${until}): ${expected.length ? expected[0]!.score : 'none'}`)
          }
        }
      }
      const b = (await ask('/api/suspicion', { guildId: H, userId: 'B', since: '2025-10-01T00:00:00Z', until: '2025-10-04T00:00:00Z', minScore: 0 })).body.members
      t.same(b.map((m: { userId: string }) => m.userId), ['B'], 'the member alone')
      t.same(b[0].factors, { ghost: 1, multiClient: 1, deletes: 1, roleChurn: 0, fastReactions: 0, newcomer: 1 }, 'their factors: typing only, two clients, a delete, first seen in the window')
      t.equal(b[0].score, 75, '25 + 20 + 20 + 10')
      // The member alone, whatever their rank among the guild's members (the list cut at limit would miss them).
      const ranked = oracle.suspicion(G, null, END, 0, 1000)
      const last = ranked.at(-1)!
      t.same((await ask('/api/suspicion', { guildId: G, until: new Date(END).toISOString(), minScore: 0, limit: 1, userId: last.userId })).body.members, [last], `the lowest of ${ranked.length} scores, with limit=1`)
      t.same((await ask('/api/suspicion', { guildId: G, userId: 'nobody', minScore: 0 })).body.members, [], 'a member without events: none')
      t.same((await ask('/api/suspicion', { guildId: H, userId: 'late', since: '2025-10-01T00:00:00Z', until: '2025-10-04T00:00:00Z', minScore: 0 })).body.members, [], 'no event in the window: none')
      t.equal((await ask('/api/suspicion', { guildId: G, userId: 'x'.repeat(65) })).status, 400, 'userId past 64 characters')
      t.equal((await ask('/api/suspicion', { guildId: G, userId: '' })).status, 400, 'an empty userId')
      t.same(await ask('/api/suspicion', { guildId: G, userId: someone[0] }, member),
        { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, 'the guild rule holds for one member too')
    })
  })
}
