import t from 'tap'
import { runScript } from '../support/run.ts'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, createPostgresDatabase, dbKinds, openTestDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { loadActivity } from '../../lib/activity/load.ts'
import { parseActivityLine, type ActivityEvent } from '../../lib/activity/event.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'
import { ghostsForGuild } from '../../db/activity.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'

const G = '900000000000000001'
const ev = (userId: string, type: 'typing' | 'message', createdAt: string, username = `user${userId}`, guildId = G): ActivityEvent =>
  ({ type, guildId, channelId: 'c1', userId, username, createdAt })
const times = (n: number, f: (i: number) => ActivityEvent) => Array.from({ length: n }, (_, i) => f(i))
async function* iterate(list: ActivityEvent[]) { yield* list }

// u1: 6 typing, 1 message → 3.0   u2: 3 typing, 0 messages → 3.0 (tie: fewer typings ranks lower)
// u3: 4 typing, 3 messages → 1.0  u4: only messages → excluded   u5: 2 typing on 2 days, 0 messages → 2.0
// u0: 3 typing, 0 messages → 3.0, ties u2 on score and typing: user id decides.
const events: ActivityEvent[] = [
  ...times(6, (i) => ev('u1', 'typing', `2025-03-01T10:0${i}:00Z`)), ev('u1', 'message', '2025-03-01T11:00:00Z', 'renamed-u1'),
  ...times(3, (i) => ev('u2', 'typing', `2025-03-02T10:0${i}:00Z`)),
  ...times(3, (i) => ev('u0', 'typing', `2025-03-02T12:0${i}:00Z`)),
  ...times(4, (i) => ev('u3', 'typing', `2025-03-01T09:0${i}:00Z`)), ...times(3, (i) => ev('u3', 'message', `2025-03-03T09:0${i}:00Z`)),
  ...times(5, (i) => ev('u4', 'message', `2025-03-01T08:0${i}:00Z`)),
  ev('u5', 'typing', '2025-03-02T23:59:59Z'), ev('u5', 'typing', '2025-03-03T00:00:00Z'),
  ev('u9', 'typing', '2025-03-01T00:00:00Z', 'other', '900000000000000002')
]

for (const kind of dbKinds) {
  t.test(`ghost scores on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const summary = await loadActivity(handle, iterate(events))
    t.match(summary, { events: events.length, guilds: 2 })
    const all = await ghostsForGuild(handle.db, { guildId: G, since: null, limit: 100 })
    t.same(all.map((g) => [g.userId, g.typingCount, g.messageCount, g.ghostScore]), [
      ['u1', 6, 1, 3], ['u0', 3, 0, 3], ['u2', 3, 0, 3], ['u5', 2, 0, 2], ['u3', 4, 3, 1]
    ], 'score desc, typing desc, user id; u4 (no typing) and other guilds excluded')
    t.equal(all[0].username, 'renamed-u1', 'latest username')
    t.same((await ghostsForGuild(handle.db, { guildId: G, since: null, limit: 2 })).map((g) => g.userId), ['u1', 'u0'])

    // since inside a day: the partial day comes from raw events, later days from the rollup.
    const since = await ghostsForGuild(handle.db, { guildId: G, since: new Date('2025-03-02T10:01:00Z'), limit: 100 })
    t.same(since.map((g) => [g.userId, g.typingCount, g.messageCount]), [['u0', 3, 0], ['u2', 2, 0], ['u5', 2, 0]])
    const lateDay = await ghostsForGuild(handle.db, { guildId: G, since: new Date('2025-03-02T23:59:59.500Z'), limit: 100 })
    t.same(lateDay.map((g) => [g.userId, g.typingCount]), [['u5', 1]], 'a cut inside the last second of a day')
    t.same(await ghostsForGuild(handle.db, { guildId: G, since: new Date('2030-01-01T00:00:00Z'), limit: 100 }), [])

    // A second load adds to the rollups.
    await loadActivity(handle, iterate([ev('u3', 'typing', '2025-03-04T00:00:00Z')]))
    const u3 = (await ghostsForGuild(handle.db, { guildId: G, since: null, limit: 100 })).find((g) => g.userId === 'u3')
    t.same([u3?.typingCount, u3?.messageCount, u3?.ghostScore], [5, 3, 1.25])
  })
}

t.test('NDJSON validation', async (t) => {
  const ok = { type: 'typing', guildId: '1', channelId: '2', userId: '3', username: 'x', createdAt: '2025-01-01T00:00:00Z' }
  t.match(parseActivityLine(JSON.stringify(ok)), { type: 'typing', createdAt: '2025-01-01T00:00:00.000Z' })
  t.match(parseActivityLine(JSON.stringify({ ...ok, createdAt: '2025-01-01T01:00:00+01:00' })), { createdAt: '2025-01-01T00:00:00.000Z' })
  const bad: [unknown, RegExp][] = [
    ['{not json', /not valid JSON/], [[1], /not a JSON object/], [{ ...ok, type: 'voice' }, /type must be/], [{ ...ok, guildId: '' }, /guildId/],
    [{ ...ok, userId: 5 }, /userId/], [{ ...ok, username: '' }, /username/], [{ ...ok, createdAt: '2025-01-01' }, /createdAt/],
    [{ ...ok, createdAt: '2025-01-01T00:00:00' }, /createdAt/], [{ ...ok, createdAt: 'yesterday' }, /createdAt/], [{ ...ok, extra: 1 }, /unknown field extra/],
    [{ ...ok, channelId: 'a'.repeat(65) }, /channelId/]
  ]
  for (const [value, reason] of bad) t.match(parseActivityLine(typeof value === 'string' ? value : JSON.stringify(value)), reason, JSON.stringify(value).slice(0, 40))
})

const run = runScript

t.test('import and seed CLIs', async (t) => {
  const url = await createPostgresDatabase(t)
  const dir = t.testdir({})
  const line = (o: object) => JSON.stringify({ type: 'typing', guildId: 'g1', channelId: 'c', userId: 'u1', username: 'n', createdAt: '2025-01-01T00:00:00Z', ...o })
  writeFileSync(join(dir, 'good.ndjson'), [line({}), '', line({ type: 'message' })].join('\n') + '\n')
  writeFileSync(join(dir, 'bad.ndjson'), [line({}), line({ type: 'voice' }), line({ userId: 'u2' }), '{oops'].join('\n'))
  const handle = await openDatabase({ url })
  t.teardown(() => handle.close())
  const count = async () => Number((await handle.pool.query('SELECT count(*) FROM activity_events')).rows[0].count)

  const good = await run('scripts/import-activity.ts', [join(dir, 'good.ndjson')], { DATABASE_URL: url })
  t.equal(good.code, 0, good.stderr)
  t.match(good.stdout, /loaded 2 events/)
  const refused = await run('scripts/import-activity.ts', [join(dir, 'bad.ndjson')], { DATABASE_URL: url })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /invalid line 2: type must be "typing" or "message"/)
  t.match(refused.stderr, /invalid line 4: not valid JSON/)
  t.match(refused.stderr, /2 invalid lines; nothing was loaded/)
  t.equal(await count(), 2, 'a refused file loads nothing and leaves earlier data')
  const skipping = await run('scripts/import-activity.ts', [join(dir, 'bad.ndjson'), '--skip-invalid'], { DATABASE_URL: url })
  t.equal(skipping.code, 0, skipping.stderr)
  t.match(skipping.stdout, /loaded 2 events/)
  t.match(skipping.stdout, /invalid: 2 \(skipped\)/)
  t.equal(await count(), 4)
  const missing = await run('scripts/import-activity.ts', [join(dir, 'nope.ndjson')], { DATABASE_URL: url })
  t.same([missing.code, missing.stderr.trim()], [1, `error: file not found: ${join(dir, 'nope.ndjson')}`])

  const seed = await run('scripts/seed-activity.ts', ['--guilds', '4', '--users', '30', '--events', '3000', '--seed', '5', '--replace'], { DATABASE_URL: url })
  t.equal(seed.code, 0, seed.stderr)
  t.match(seed.stdout, /seeded 3000 events/)
  t.equal(await count(), 3000, '--replace empties the tables first')
})

t.test('the synthetic generator is deterministic and includes the demo guild', async (t) => {
  const collect = async (seed: number) => {
    const out: string[] = []
    for await (const e of syntheticActivity({ guilds: 3, users: 20, events: 500, seed, end: new Date('2026-01-01T00:00:00Z') })) out.push(JSON.stringify(e))
    return out
  }
  const a = await collect(3)
  t.same(await collect(3), a)
  t.not(JSON.stringify(await collect(4)), JSON.stringify(a))
  t.ok(a.some((e) => e.includes('"guildId":"700000000000000001"') && e.includes('"username":"ada"')), 'demo users act in the demo guild')
  t.ok(a.every((e) => parseActivityLine(e) !== null && typeof parseActivityLine(e) === 'object'), 'every event is a valid NDJSON line')
})

t.test('GET /api/ghosts: permissions and validation', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  await loadActivity(handle, iterate(events))
  const app = await buildTestApp(t, handle, {}, idp.env())
  const tokenFor = async (app: FastifyInstance, id: string, guilds: typeof idp.guilds) => {
    idp.user = { id, username: `p${id}`, discriminator: '1', avatar: null }
    idp.guilds = guilds
    return (await app.inject('/api/auth/identity?code=x')).json().accessToken as string
  }
  const guild = (o: Partial<(typeof idp.guilds)[0]>) => ({ id: G, name: 'G', icon: null, owner: false, permissions: '0', ...o })
  const ask = async (token: string | null, query = `guildId=${G}`) => {
    const res = await app.inject({ url: `/api/ghosts?${query}`, headers: token ? { authorization: `Bearer ${token}` } : {} })
    return { status: res.statusCode, body: res.json() }
  }
  const owner = await tokenFor(app, '1', [guild({ owner: true })])
  const administrator = await tokenFor(app, '2', [guild({ permissions: '8' })])
  const manager = await tokenFor(app, '3', [guild({ permissions: String(0x20 | 0x400) })])
  const member = await tokenFor(app, '4', [guild({ permissions: String(0x400 | 0x800) })])
  const stranger = await tokenFor(app, '5', [])
  const admin = await tokenFor(app, '6', [])
  await handle.db.updateTable('users').set({ role: 'ADMIN' }).where('provider_id', '=', '6').execute()
  const adminAgain = await tokenFor(app, '6', [])

  const okBody = (await ask(owner)).body
  t.same(Object.keys(okBody), ['guildId', 'since', 'ghosts', 'count'])
  t.equal(okBody.count, 5)
  t.same(okBody.ghosts[0], { userId: 'u1', username: 'renamed-u1', typingCount: 6, messageCount: 1, ghostScore: 3 })
  for (const [name, token] of [['administrator', administrator], ['manage guild', manager], ['role ADMIN', adminAgain]] as const) {
    t.equal((await ask(token)).status, 200, name)
  }
  void admin
  for (const [name, token] of [['plain member', member], ['not in the guild', stranger]] as const) {
    t.same(await ask(token), { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, name)
  }
  t.same(await ask(null), { status: 401, body: { error: 'Unauthorized', message: 'Missing authorization header' } })
  t.equal((await ask(owner, '')).status, 400, 'guildId required')
  t.same((await ask(owner, `guildId=${G}&since=yesterday`)).body, { error: 'Bad Request', message: 'querystring/since must be an ISO 8601 date-time' })
  t.equal((await ask(owner, `guildId=${G}&limit=0`)).status, 400)
  t.equal((await ask(owner, `guildId=${G}&limit=1001`)).status, 400)
  const since = (await ask(owner, `guildId=${G}&since=2025-03-02T10:01:00Z&limit=2`)).body
  t.same([since.since, since.count, since.ghosts.map((g: { userId: string }) => g.userId)], ['2025-03-02T10:01:00.000Z', 2, ['u0', 'u2']])
  t.equal((await ask(owner, `guildId=${G}&since=2025-03-02`)).body.since, '2025-03-02T00:00:00.000Z', 'a date alone is midnight UTC')
})

t.test('the embedded start seeds demo activity the dev users can read', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url })
  t.teardown(() => handle.close())
  await migrateToLatest(handle.db)
  const { seedDemoActivityIfEmpty } = await import('../../db/sample/activity.ts')
  t.ok(await seedDemoActivityIfEmpty(handle))
  t.equal(await seedDemoActivityIfEmpty(handle), null, 'only once')
  const ghosts = await ghostsForGuild(handle.db, { guildId: '700000000000000001', since: null, limit: 1000 })
  t.ok(ghosts.length > 5, `${ghosts.length} ghosts in the demo guild`)
})
