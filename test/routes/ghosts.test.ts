import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp, type StandInGuild } from '../support/idp-server.ts'
import type { ActivityEvent } from '../../lib/activity/event.ts'
import { loadActivity } from '../../db/activity-load.ts'
import { setRole } from '../../db/auth.ts'

const G = '900000000000000001'
const ev = (userId: string, type: 'typing' | 'message', createdAt: string): ActivityEvent =>
  ({ type, guildId: G, channelId: 'c1', userId, username: `name-${userId}`, createdAt })
async function * iterate (list: ActivityEvent[]) { yield * list }
const events = [
  ev('u1', 'typing', '2025-03-01T10:00:00Z'), ev('u1', 'typing', '2025-03-01T10:01:00Z'), ev('u1', 'message', '2025-03-02T10:00:00Z'),
  ev('u2', 'typing', '2025-03-02T09:00:00Z'), ev('u2', 'typing', '2025-03-02T12:00:00Z'), ev('u2', 'typing', '2025-03-03T09:00:00Z'),
  ev('u3', 'message', '2025-03-02T09:00:00Z')
]

t.test('GET /api/ghosts', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  await loadActivity(handle, iterate(events))
  const app = await buildTestApp(t, handle, {}, idp.env())

  // Signs in through the auth API, which stores the guild list the permission rule reads.
  const signIn = async (app: FastifyInstance, id: string, guilds: StandInGuild[]) => {
    idp.user = { id, username: `p${id}`, discriminator: '1', avatar: null }
    idp.guilds = guilds
    const res = await app.inject('/api/auth/identity?code=ok')
    t.equal(res.statusCode, 200, `sign-in of ${id}`)
    return res.json().accessToken as string
  }
  const guild = (o: Partial<StandInGuild>): StandInGuild => ({ id: G, name: 'G', icon: null, owner: false, permissions: '0', ...o })
  const ask = async (token: string | null, query: string) => {
    const res = await app.inject({ url: `/api/ghosts?${query}`, headers: token ? { authorization: `Bearer ${token}` } : {} })
    return { status: res.statusCode, body: res.json() }
  }
  const owner = await signIn(app, '1', [guild({ owner: true })])
  const administrator = await signIn(app, '2', [guild({ permissions: '8' })])
  const manager = await signIn(app, '3', [guild({ permissions: String(0x20 | 0x400) })])
  const member = await signIn(app, '4', [guild({ permissions: String(0x400 | 0x800) })])
  const elsewhere = await signIn(app, '5', [{ ...guild({ owner: true }), id: '900000000000000002' }])
  await signIn(app, '6', [])
  await handle.db.updateTable('users').set({ role: 'ADMIN' }).where('provider_id', '=', '6').execute()
  const admin = await signIn(app, '6', [])

  t.test('the answer', async (t) => {
    t.same(await ask(owner, `guildId=${G}`), {
      status: 200,
      body: {
        guildId: G,
        since: null,
        ghosts: [
          { userId: 'u2', username: 'name-u2', typingCount: 3, messageCount: 0, ghostScore: 3 },
          { userId: 'u1', username: 'name-u1', typingCount: 2, messageCount: 1, ghostScore: 1 }
        ],
        count: 2
      }
    })
    t.same(await ask(owner, `guildId=${G}&since=2025-03-02T10:00:00%2B01:00&limit=1`), {
      status: 200,
      body: { guildId: G, since: '2025-03-02T09:00:00.000Z', ghosts: [{ userId: 'u2', username: 'name-u2', typingCount: 3, messageCount: 0, ghostScore: 3 }], count: 1 }
    }, 'since with an offset, normalised to UTC; limit')
    const dateOnly = await ask(owner, `guildId=${G}&since=2025-03-02`)
    t.same([dateOnly.body.since, dateOnly.body.ghosts.map((g: { userId: string }) => g.userId)], ['2025-03-02T00:00:00.000Z', ['u2']], 'a date alone is midnight UTC')
    t.same((await ask(owner, `guildId=${G}&since=2025-03-02T09:30:00`)).body.ghosts[0].typingCount, 2, 'no zone: UTC')
    t.same((await ask(owner, 'guildId=900000000000000099')).status, 403, 'a guild not in the caller\'s list')
  })

  t.test('guild-scoped permission', async (t) => {
    for (const [name, token] of [['owner', owner], ['ADMINISTRATOR', administrator], ['MANAGE_GUILD', manager], ['role ADMIN', admin]] as const) {
      t.equal((await ask(token, `guildId=${G}`)).status, 200, name)
    }
    for (const [name, token] of [['member without the bits', member], ['owner of another guild only', elsewhere]] as const) {
      t.same(await ask(token, `guildId=${G}`), { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, name)
    }
    t.same(await ask(null, `guildId=${G}`), { status: 401, body: { error: 'Unauthorized', message: 'Missing authorization header' } })
    t.same(await ask('not-a-token', `guildId=${G}`), { status: 401, body: { error: 'Unauthorized', message: 'Invalid token' } })
  })

  t.test('a demotion applies to the next request, with the same access token', async (t) => {
    t.equal((await ask(admin, 'guildId=900000000000000077')).status, 200, 'ADMIN reads any guild')
    await setRole(handle.db, '6', 'USER')
    t.same(await ask(admin, 'guildId=900000000000000077'), { status: 403, body: { error: 'Forbidden', message: 'Insufficient permissions' } }, 'demoted: refused at once')
    await setRole(handle.db, '6', 'ADMIN')
    t.equal((await ask(admin, 'guildId=900000000000000077')).status, 200, 'promoted again')
  })

  t.test('validation', async (t) => {
    const missing = await ask(owner, '')
    t.equal(missing.status, 400)
    t.same(Object.keys(missing.body), ['error', 'message'])
    t.match(missing.body, { error: 'Bad Request', message: /guildId/ })
    for (const since of ['yesterday', '2025-02-30T00:00:00Z', '2025-03-01T25:00:00Z', '1710000000', '']) {
      t.same(await ask(owner, `guildId=${G}&since=${encodeURIComponent(since)}`),
        { status: 400, body: { error: 'Bad Request', message: 'querystring/since must be an ISO 8601 date-time' } }, `since=${since}`)
    }
    for (const query of ['limit=0', 'limit=1001', 'limit=ten', `guildId=${'9'.repeat(65)}`]) {
      const res = await ask(owner, query.startsWith('guildId') ? query : `guildId=${G}&${query}`)
      t.equal(res.status, 400, query)
      t.equal(res.body.error, 'Bad Request')
    }
    t.equal((await ask(owner, `guildId=${G}&limit=1000`)).status, 200)
  })

  t.test('the OpenAPI entry', async (t) => {
    const doc = (await app.inject('/api/docs/json')).json()
    const op = doc.paths['/api/ghosts'].get
    t.same(op.tags, ['Analytics'])
    t.same(op.security, [{ bearerAuth: [] }])
    t.match(op.description, /typingCount \/ \(messageCount \+ 1\)/)
    t.match(op.description, /MANAGE_GUILD/)
    t.same(Object.keys(op.responses).filter((s) => s !== '503').sort(), ['200', '400', '401', '403', '429'])
    const params = Object.fromEntries(op.parameters.map((p: { name: string; required?: boolean }) => [p.name, Boolean(p.required)]))
    t.same(params, { guildId: true, since: false, until: false, limit: false })
    const ghost = op.responses['200'].content['application/json'].schema.properties.ghosts.items
    t.same(Object.keys(ghost.properties), ['userId', 'username', 'typingCount', 'messageCount', 'ghostScore'])
  })
})
