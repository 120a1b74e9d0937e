import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { guildSignIn } from '../support/activity.ts'
import { StandInIdp, type StandInGuild } from '../support/idp-server.ts'
import type { ActivityEvent } from '../../lib/activity/event.ts'
import { loadActivity, loadBatch } from '../../db/activity-load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { setRole } from '../../db/auth.ts'
import { Oracle } from './oracle.ts'

// A generated month across both DST ends of 2025 (Europe 26 October, United States 2 November), plus a
// small guild built for ties: ids that sort differently byte by byte than as UTF-16, equal counts.
const G = '700000000000000001'
const T = '900000000000000010'
const END = Date.parse('2025-11-10T00:00:00Z')
const generated = [...syntheticActivity({ guilds: 2, users: 40, events: 9000, seed: 21, end: new Date(END), days: 30 })]
const ids = ['B', 'a', 'u\u{FF21}', 'u\u{1F600}', 'z']
const at = (day: number, h: number, m = 0) => `2025-10-${String(day).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00Z`
const tie = (userId: string, e: Partial<ActivityEvent> & { type: ActivityEvent['type'] }, createdAt: string, username = `n-${userId}`): ActivityEvent =>
  ({ guildId: T, userId, username, createdAt, ...e } as ActivityEvent)
const ties: ActivityEvent[] = ids.flatMap((u) => [
  ...[1, 2, 3, 4, 5].map((h) => tie(u, { type: 'presence', status: 'online', clients: h % 2 ? ['desktop', 'web'] : ['mobile'] }, at(10, h))),
  tie(u, { type: 'role_change', roleId: 'r1', change: 'added' }, at(11, 9)),
  tie(u, { type: 'role_change', roleId: 'r1', change: 'removed' }, at(11, 10)),
  ...[1, 2, 3].map((m) => tie(u, { type: 'typing', channelId: u === 'z' ? 'c\u{1F600}' : 'c\u{FF21}' }, at(12, 20, m))),
  tie(u, { type: 'presence', status: 'idle', clients: ['desktop', 'web', 'mobile'] }, at(20, 8))
])
// Two events of the same instant: the one stored last gives the username.
ties.push(tie('a', { type: 'join' }, at(25, 12), 'first-name'), tie('a', { type: 'leave' }, at(25, 12), 'last-name'))
// Reactions with and without latency, a deleter.
ties.push(tie('B', { type: 'reaction', channelId: 'c1', latencyMs: 2999 }, at(21, 1)), tie('B', { type: 'reaction', channelId: 'c1', latencyMs: 3000 }, at(21, 2)),
  tie('B', { type: 'reaction', channelId: 'c1' }, at(21, 3)), tie('B', { type: 'message_delete', channelId: 'c1' }, at(21, 4)))
// A member whose exact score is a half (12.5 + 60/7 + 10/7 = 22.5) that the double sum puts below it.
ties.push(tie('h', { type: 'typing', channelId: 'c\u{FF21}' }, at(16, 9)), tie('h', { type: 'message', channelId: 'c\u{FF21}' }, at(16, 10)),
  ...[1, 2, 3, 4, 5, 6, 7].map((n) => tie('h', { type: 'presence', status: 'online', clients: n <= 3 ? ['desktop', 'mobile'] : ['web'] }, at(16, 10, n))),
  ...[1, 2, 3, 4, 5, 6, 7].map((n) => tie('h', { type: 'reaction', channelId: 'c1', latencyMs: n === 1 ? 100 : 5000 }, at(16, 11, n))))
const events = [...generated, ...ties]
const oracle = new Oracle(events)

t.test('analytics answers equal the answers computed from the raw events', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  // Loads merging into the rollups the earlier ones made: two through the staging table, the rest in the
  // ingestion API's batches (one of them sent twice: the second time, all duplicates).
  const summaries = [await loadActivity(handle, events.slice(0, 4000)), await loadActivity(handle, events.slice(4000, 7000))]
  for (let i = 7000; i < events.length; i += 1000) summaries.push(await loadBatch(handle, events.slice(i, i + 1000)))
  t.match(await loadBatch(handle, events.slice(7000, 8000)), { events: 0, duplicates: 1000 }, 'a batch sent again stores nothing')
  t.equal(summaries.reduce((n, s) => n + s.events, 0), events.length)
  for (const type of ['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave']) {
    t.ok(summaries.reduce((n, s) => n + (s.types[type] ?? 0), 0) > 0, `the data has ${type} events`)
  }
  const app: FastifyInstance = await buildTestApp(t, handle, {}, idp.env())
  const signIn = guildSignIn(t, app, idp)
  const guild = (id: string, o: Partial<StandInGuild> = {}): StandInGuild => ({ id, name: 'G', icon: null, owner: false, permissions: '0', ...o })
  const owner = await signIn('1', [guild(G, { owner: true }), guild(T, { permissions: '32' })])
  const ask = async (path: string, query: Record<string, string | number | undefined>, token = owner) => {
    const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))
    const res = await app.inject({ url: `${path}?${q}`, headers: { authorization: `Bearer ${token}` } })
    return { status: res.statusCode, body: res.json() }
  }
  const ms = (s: string | null) => (s === null ? null : Date.parse(s))
  const windows: [string | null, string][] = [
    [null, '2026-01-01T00:00:00Z'],
    ['2025-10-20T13:17:00.250Z', '2025-11-05T07:00:00Z'],
    ['2025-11-01T08:00:00Z', '2025-11-01T21:30:00Z'],
    ['2025-10-10T00:00:00Z', '2025-10-13T00:00:00Z'],
    ['2030-01-01T00:00:00Z', '2030-02-01T00:00:00Z']
  ]
  const echo = (g: string, since: string | null, until: string) => ({ guildId: g, since: since === null ? null : new Date(since).toISOString(), until: new Date(until).toISOString() })

  t.test('lurkers, roles, suspicion', async (t) => {
    for (const g of [G, T]) {
      for (const [since, until] of windows) {
        const label = `${g} [${since}, ${until})`
        const s = ms(since)
        const u = ms(until)!
        const lurk = oracle.lurkers(g, s, u, 2, 1000)
        t.same(await ask('/api/lurkers', { guildId: g, since: since ?? undefined, until, minPresence: 2, limit: 1000 }),
          { status: 200, body: { ...echo(g, since, until), lurkers: lurk, count: lurk.length } }, `lurkers ${label}`)
        t.same(await ask('/api/roles', { guildId: g, since: since ?? undefined, until, limit: 1000 }),
          { status: 200, body: { ...echo(g, since, until), members: oracle.roles(g, s, u, 1000) } }, `roles ${label}`)
        for (const minScore of [0, 1, 30]) {
          t.same(await ask('/api/suspicion', { guildId: g, since: since ?? undefined, until, minScore, limit: 1000 }),
            { status: 200, body: { ...echo(g, since, until), members: oracle.suspicion(g, s, u, minScore, 1000) } }, `suspicion >= ${minScore} ${label}`)
        }
      }
    }
    // Some answers are not empty, and limits cut the sorted lists.
    t.ok(oracle.lurkers(G, null, END, 2, 1000).length > 0, 'the generated data has lurkers')
    t.ok(oracle.roles(G, null, END, 1000).some((m) => m.drift), 'and role drift')
    t.ok(oracle.suspicion(G, Date.parse('2025-10-25T00:00:00Z'), END, 1, 1000).some((m) => m.factors.newcomer === 1), 'and newcomers')
    t.same((await ask('/api/lurkers', { guildId: G, minPresence: 2, limit: 3 })).body.lurkers, oracle.lurkers(G, null, Date.now(), 2, 3))
    t.same((await ask('/api/suspicion', { guildId: G, limit: 4 })).body.members, oracle.suspicion(G, null, Date.now(), 1, 4))
    // Ties: byte order of the ids (not UTF-16 order).
    const tied = (await ask('/api/lurkers', { guildId: T, until: '2025-10-11T00:00:00Z' })).body.lurkers.map((l: { userId: string }) => l.userId)
    t.same(tied, ['B', 'a', 'u\u{FF21}', 'u\u{1F600}', 'z'], 'equal counts: userId byte by byte')
    t.equal((await ask('/api/roles', { guildId: T })).body.members.find((m: { userId: string }) => m.userId === 'a').username, 'last-name', 'same instant: the one stored last')
    const b = (await ask('/api/suspicion', { guildId: T, minScore: 0 })).body.members.find((m: { userId: string }) => m.userId === 'B')
    t.same(b.factors, { ghost: 1, multiClient: 0.6667, deletes: 1, roleChurn: 0.4, fastReactions: 0.5, newcomer: 0 }, 'the factors of a hand-made member')
    t.equal(b.score, 69, 'score from the exact factors: 25 + 13.33 + 20 + 6 + 5')
    const h = (await ask('/api/suspicion', { guildId: T, minScore: 0 })).body.members.find((m: { userId: string }) => m.userId === 'h')
    t.equal(h.score, 23, 'an exact half rounds up, though the double sum of the factors is 22.499999999999996')
  })

  t.test('heatmap, in several time zones across the DST changes', async (t) => {
    for (const g of [G, T]) {
      for (const [since, until] of windows) {
        for (const timeZone of ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata']) {
          const expected = oracle.heatmap(g, ms(since), ms(until)!, timeZone, 1000)
          t.same(await ask('/api/heatmap', { guildId: g, since: since ?? undefined, until, timeZone, limit: 1000 }),
            { status: 200, body: { ...echo(g, since, until), ...expected } }, `${g} ${timeZone} [${since}, ${until})`)
        }
      }
    }
    // The night of the autumn change in Paris: 02:00-03:00 local happens twice.
    const night = await ask('/api/heatmap', { guildId: G, since: '2025-10-25T22:00:00Z', until: '2025-10-26T04:00:00Z', timeZone: 'Europe/Paris' })
    t.same(night.body.cells, oracle.heatmap(G, Date.parse('2025-10-25T22:00:00Z'), Date.parse('2025-10-26T04:00:00Z'), 'Europe/Paris', 100).cells)
    const two = await ask('/api/heatmap', { guildId: G, timeZone: 'Europe/Paris', limit: 2 })
    t.same(two.body.channels, oracle.heatmap(G, null, Date.now(), 'Europe/Paris', 2).channels, 'limit: the busiest channels')
    t.ok(two.body.cells.every((c: { channelId: string }) => two.body.channels.some((x: { channelId: string }) => x.channelId === c.channelId)), 'cells of those channels only')
    t.same((await ask('/api/heatmap', { guildId: T })).body.channels.map((c: { channelId: string }) => c.channelId), ['c\u{FF21}', 'c\u{1F600}'], 'channel ties byte by byte')
    for (const timeZone of ['Mars/Olympus', '+02:00', 'UTC+3', '']) {
      t.equal((await ask('/api/heatmap', { guildId: G, timeZone })).status, 400, `timeZone ${JSON.stringify(timeZone)}`)
    }
  })

  t.test('clients and shifts, with their 7-day default', async (t) => {
    const cases: [string | undefined, string][] = [
      [undefined, '2025-11-08T12:00:00Z'], ['2025-10-20T13:17:00.250Z', '2025-11-05T07:00:00Z'], ['2025-11-01T08:00:00Z', '2025-11-01T21:30:00Z'],
      [undefined, '2025-10-11T00:00:00Z'], ['2030-01-01T00:00:00Z', '2030-02-01T00:00:00Z']
    ]
    for (const g of [G, T]) {
      for (const [since, until] of cases) {
        const u = Date.parse(until)
        const s = since === undefined ? u - 7 * 86_400_000 : Date.parse(since)
        const e = echo(g, new Date(s).toISOString(), until)
        t.same(await ask('/api/clients', { guildId: g, since, until, limit: 1000 }), { status: 200, body: { ...e, ...oracle.clients(g, s, u, 1000) } }, `clients ${g} [${since}, ${until})`)
        for (const minEvents of [1, 10]) {
          t.same(await ask('/api/shifts', { guildId: g, since, until, minEvents, limit: 1000 }),
            { status: 200, body: { ...e, members: oracle.shifts(g, s, u, minEvents, 1000) } }, `shifts >= ${minEvents} ${g} [${since}, ${until})`)
        }
      }
    }
    const week = oracle.shifts(G, END - 7 * 86_400_000, END, 10, 1000)
    t.ok(week.some((m) => m.direction === 'up') && week.some((m) => m.direction === 'down'), 'members shift both ways in the generated data')
    t.ok(oracle.clients(G, END - 7 * 86_400_000, END, 100).newClients.length > 0, 'and take up new devices')
    const now = await ask('/api/shifts', { guildId: G })
    t.equal(Date.parse(now.body.until) - Date.parse(now.body.since), 7 * 86_400_000, 'the default window is the 7 days before now')
  })

  t.test('a member\'s timeline, page by page', async (t) => {
    const busiest = [...new Set(oracle.guild(G).map((e) => e.userId))].slice(0, 3)
    for (const userId of [...busiest, 'a']) {
      const g = userId === 'a' ? T : G
      for (const [since, until, types] of [[null, '2026-01-01T00:00:00Z', undefined], ['2025-10-20T13:17:00.250Z', '2025-11-05T07:00:00Z', 'presence,message,join,leave']] as const) {
        const expected = oracle.timeline(g, userId, ms(since), ms(until)!, types === undefined ? null : types.split(','))
        const pages = []
        let cursor: string | undefined
        for (let i = 0; i < 1000; i++) {
          const res = await ask(`/api/members/${encodeURIComponent(userId)}/activity`, { guildId: g, since: since ?? undefined, until, types, limit: 7, cursor })
          t.equal(res.status, 200)
          t.match(res.body, { userId, ...echo(g, since, until) })
          t.ok(res.body.events.length <= 7)
          pages.push(...res.body.events)
          cursor = res.body.nextCursor ?? undefined
          if (cursor === undefined) break
          t.equal(res.body.events.length, 7, 'only the last page is short')
        }
        t.same(pages, expected, `${userId} [${since}, ${until}) ${types ?? 'all types'}: ${expected.length} events`)
      }
    }
    const first = await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, limit: 5 })
    const cursor = first.body.nextCursor
    t.ok(cursor)
    const next = await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, limit: 5, cursor })
    t.equal(next.body.until, first.body.until, 'the following pages keep the first page\'s until')
    for (const [name, query] of [['another limit', { limit: 6 }], ['types', { limit: 5, types: 'message' }], ['since', { limit: 5, since: '2025-01-01T00:00:00Z' }]] as const) {
      t.same(await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, cursor, ...query }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/cursor is not a cursor of this query' } }, `a cursor reused with ${name}`)
    }
    t.equal((await ask(`/api/members/${busiest[1]}/activity`, { guildId: G, limit: 5, cursor })).status, 400, 'another member')
    t.equal((await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, limit: 5, cursor: `${cursor}x` })).status, 400, 'a forged cursor')
    t.equal((await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, limit: 5, cursor: 'abc' })).status, 400)
    t.same(await ask(`/api/members/${busiest[0]}/activity`, { guildId: G, types: 'message,voice' }),
      { status: 400, body: { error: 'Bad Request', message: 'querystring/types: unknown type "voice" (known: message, typing, message_delete, reaction, presence, role_change, join, leave)' } })
    t.same((await ask('/api/members/nobody/activity', { guildId: G })).body.events, [], 'a member without events: empty')
  })

  t.test('permission and common rules', async (t) => {
    const linus = '100000000000000003'
    const member = await signIn(linus, [guild(G, { permissions: String(0x400) })])
    await signIn('6', [])
    await setRole(handle.db, '6', 'ADMIN')
    const admin = await signIn('6', [])
    for (const path of ['/api/lurkers', '/api/heatmap', '/api/roles', '/api/clients', '/api/shifts', '/api/suspicion', '/api/members/100000000000000001/activity']) {
      t.same(await ask(path, { guildId: G }, member), { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, `${path}: a plain member`)
      t.equal((await ask(path, {})).status, 400, `${path} without guildId`)
      t.same(await ask(path, { guildId: G, since: '2025-11-01T00:00:00Z', until: '2025-11-01T00:00:00Z' }),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since must be before until' } }, `${path}: since >= until`)
      t.equal((await ask(path, { guildId: G, until: 'tomorrow' })).status, 400, `${path}: a malformed until`)
      t.equal((await ask(path, { guildId: G, limit: 1001 })).status, 400, `${path}: limit`)
      const res = await app.inject({ url: `${path}?guildId=${G}` })
      t.equal(res.statusCode, 401, `${path} without a token`)
      const unknown = await ask(path, { guildId: '123' }, admin)
      t.equal(unknown.status, 200, `${path}: an unknown guild is an empty answer (role ADMIN)`)
      t.notMatch(JSON.stringify(unknown.body), /"(users|previousUsers)":[1-9]|"username"|"createdAt"|"channelId"/, 'with nothing in it')
    }
    const own = await ask(`/api/members/${linus}/activity`, { guildId: G, limit: 1000 }, member)
    t.equal(own.status, 200, 'a member reads their own activity')
    t.same(own.body.events, oracle.timeline(G, linus, null, Date.now(), null))
  })
})
