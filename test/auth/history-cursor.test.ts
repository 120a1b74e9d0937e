import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { sql } from '../../db/kysely.ts'
import { setRole } from '../../db/auth.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp, type StandInUser } from '../support/idp-server.ts'
import { cursorCodec } from '../../lib/cursor.ts'
import { historyCursors } from '../../lib/auth/history.ts'
import { timelineCursors } from '../../lib/activity/analytics.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const ada: StandInUser = { id: '310000000000000001', username: 'ada', discriminator: '0001', avatar: null }
const bob: StandInUser = { id: '310000000000000002', username: 'bob', discriminator: '0002', avatar: null }
const invalid = { status: 400, body: { error: 'Bad Request', message: 'Invalid cursor' } }

interface Page { events: Record<string, unknown>[]; nextCursor: string | null }

async function setup (t: Test) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  // Row ids of 16 digits: a cursor must carry them, and must not show them.
  await sql`SELECT setval('audit_id_seq', 4000000000000000)`.execute(handle.db)
  const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000 }, idp.env())
  const signIn = async (user: StandInUser) => {
    idp.user = user
    const res = await app.inject({ url: '/api/auth/identity?code=good', headers: { 'user-agent': 'tap' } })
    t.equal(res.statusCode, 200, `${user.username} signs in`)
    return res.json() as { accessToken: string; user: { id: string } }
  }
  for (let i = 0; i < 4; i++) await signIn(ada)
  for (let i = 0; i < 3; i++) await signIn(bob)
  const adaToken = (await signIn(ada)).accessToken
  const bobToken = (await signIn(bob)).accessToken
  const ask = async (app: FastifyInstance, url: string, token: string) => {
    const res = await app.inject({ url, headers: bearer(token) })
    return { status: res.statusCode, body: res.json() as Page }
  }
  const ids = async () => (await sql<{ id: string }>`SELECT id::text AS id FROM audit`.execute(handle.db)).rows.map((r) => r.id)
  return { idp, handle, app, signIn, adaToken, bobToken, ask, ids }
}

// Every page of a listing, following nextCursor: the events in order and the cursors given.
async function allPages (ask: (url: string) => Promise<{ status: number; body: Page }>, url: string) {
  const events: Record<string, unknown>[] = []
  const cursors: string[] = []
  for (;;) {
    const cursor = cursors[cursors.length - 1]
    const res = await ask(`${url}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    if (res.status !== 200) throw new Error(`page ${cursors.length + 1}: ${res.status} ${JSON.stringify(res.body)}`)
    events.push(...res.body.events)
    if (res.body.nextCursor === null) return { events, cursors }
    cursors.push(res.body.nextCursor)
  }
}

t.test('the security history: genuine cursors page through it; any other cursor is 400 Invalid cursor', async (t) => {
  const { app, adaToken, bobToken, ask, ids } = await setup(t)
  const history = (token: string) => (url: string) => ask(app, url, token)

  const whole = await ask(app, '/api/auth/history?limit=1000', adaToken)
  t.equal(whole.body.events.length, 5, 'ada\'s five sign-ins')
  const paged = await allPages(history(adaToken), '/api/auth/history?limit=2')
  t.same(paged.events, whole.body.events, 'two at a time, the same events in the same order')
  t.equal(paged.cursors.length, 2)

  const rowIds = await ids()
  for (const cursor of paged.cursors) {
    const decoded = Buffer.from(cursor, 'base64url').toString('latin1')
    t.notOk(rowIds.some((id) => cursor.includes(id) || decoded.includes(id) || decoded.includes(id.slice(-6))), 'no audit row id can be read in a cursor')
  }

  const forged = ['h:999999999', `h:${rowIds.sort()[rowIds.length - 1]!}`, 'h:1'].map((text) => Buffer.from(text).toString('base64url'))
  for (const cursor of [...forged, 'forged', 'nope', '-_-_-_', 'aDo0Mg']) {
    t.same(await ask(app, `/api/auth/history?cursor=${cursor}`, adaToken), invalid, `a cursor the server did not make: ${cursor}`)
  }

  const genuine = paged.cursors[0]!
  const swap = (c: string) => (c === 'A' ? 'B' : 'A')
  const tampered = [
    `${swap(genuine[0]!)}${genuine.slice(1)}`,
    `${genuine.slice(0, 10)}${swap(genuine[10]!)}${genuine.slice(11)}`,
    `${genuine.slice(0, -1)}${swap(genuine[genuine.length - 1]!)}`,
    `${genuine}A`,
    `${genuine}x`,
    genuine.slice(0, -1),
    genuine.slice(0, -4),
    genuine.slice(4)
  ]
  for (const cursor of tampered) t.same(await ask(app, `/api/auth/history?cursor=${encodeURIComponent(cursor)}`, adaToken), invalid, `a tampered cursor: ${cursor}`)

  t.same(await ask(app, `/api/auth/history?limit=2&cursor=${genuine}`, bobToken), invalid, 'one user\'s cursor is not another\'s')
  t.same(await ask(app, `/api/auth/history?limit=3&cursor=${genuine}`, adaToken), invalid, 'nor good with another limit')
  t.equal((await ask(app, `/api/auth/history?limit=2&cursor=${genuine}`, adaToken)).status, 200, 'but still good where it was made')

  const bobPaged = await allPages(history(bobToken), '/api/auth/history?limit=1')
  t.equal(bobPaged.events.length, 4, 'bob pages through his own four')
  t.same(bobPaged.events, (await ask(app, '/api/auth/history', bobToken)).body.events)
})

t.test('the admin audit trail\'s cursors: genuine ones page, bound to their filters; others are 400', async (t) => {
  const { app, handle, signIn, adaToken, ask } = await setup(t)
  await setRole(handle.db, ada.id, 'ADMIN')
  const admin = (await signIn(ada)).accessToken
  const trail = (url: string) => ask(app, url, admin)

  const whole = await trail('/api/admin/audit?limit=1000')
  const paged = await allPages(trail, '/api/admin/audit?limit=3')
  t.same(paged.events, whole.body.events, 'three at a time, the same events')
  const filtered = await allPages(trail, '/api/admin/audit?type=signin&limit=2')
  t.same(filtered.events, whole.body.events.filter((e) => e.type === 'signin'), 'a filtered trail pages too')

  const cursor = paged.cursors[0]!
  t.same(await trail(`/api/admin/audit?limit=3&cursor=${Buffer.from('h:999999999').toString('base64url')}`), invalid, 'a forged cursor')
  t.same(await trail(`/api/admin/audit?limit=3&type=signin&cursor=${cursor}`), invalid, 'a cursor with other filters')
  t.same(await trail(`/api/auth/history?limit=3&cursor=${cursor}`), invalid, 'an audit cursor is no history cursor')
  const own = (await ask(app, '/api/auth/history?limit=1', adaToken)).body.nextCursor!
  t.same(await trail(`/api/admin/audit?limit=1&cursor=${own}`), invalid, 'nor a history cursor an audit one')
})

t.test('another instance with the same JWT_SECRET reads the cursors; one with another secret does not', async (t) => {
  const { app, handle, idp, adaToken, ask } = await setup(t)
  const cursor = (await ask(app, '/api/auth/history?limit=2', adaToken)).body.nextCursor!
  const twin = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000 }, idp.env())
  t.equal((await ask(twin, `/api/auth/history?limit=2&cursor=${cursor}`, adaToken)).status, 200)
  const other = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000, JWT_SECRET: `${'another-access-secret-'.repeat(2)}0123456789` }, idp.env())
  const token = (await other.inject({ url: '/api/auth/identity?code=good' })).json().accessToken as string
  t.same(await ask(other, `/api/auth/history?limit=2&cursor=${cursor}`, token), invalid)
})

t.test('one sealing for every listing\'s cursors', async (t) => {
  const anything = (v: unknown): v is unknown => true
  const secret = 'a-secret-of-the-deployment-0123456789'
  const history = historyCursors('history', secret)
  const cursor = history.encode('4000000000000001', '["u",2]')
  t.equal(history.decode(cursor, '["u",2]'), '4000000000000001')
  t.not(history.encode('4000000000000001', '["u",2]'), cursor, 'sealed afresh each time: equal positions do not show as equal cursors')
  t.equal(historyCursors('audit', secret).decode(cursor, '["u",2]'), null, 'each listing its own key')
  t.equal(timelineCursors(secret).decode(cursor, '["u",2]'), null)
  // Sealed with the right key, but not a row id: still not a history position.
  t.equal(history.decode(cursorCodec('security-history', secret, anything).encode({ id: 1 }, 's'), 's'), null)
  t.equal(timelineCursors(secret).decode(cursorCodec('member-activity', secret, anything).encode([1, '2', 3], 's'), 's'), null)
  // Without a secret, the process's own key: readable by this process alone.
  const local = cursorCodec('p', undefined, anything)
  t.same(cursorCodec('p', undefined, anything).decode(local.encode({ at: 1 }, 's'), 's'), { at: 1 })
  t.equal(cursorCodec('p', secret, anything).decode(local.encode({ at: 1 }, 's'), 's'), null)
})
