import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp, type StandInUser } from '../support/idp-server.ts'
import { setRole } from '../../db/auth.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const ada: StandInUser = { id: '300000000000000001', username: 'ada', discriminator: '0001', avatar: null }
const bob: StandInUser = { id: '300000000000000002', username: 'bob', discriminator: '0002', avatar: null }

async function setup (t: Test, overrides = {}) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000, ...overrides }, idp.env())
  const signIn = async (user: StandInUser, remoteAddress = '127.0.0.1') => {
    idp.user = user
    const res = await app.inject({ url: '/api/auth/identity?code=good', remoteAddress, headers: { 'user-agent': 'tap' } })
    t.equal(res.statusCode, 200, `${user.username} signs in`)
    return res.json() as { accessToken: string; refreshToken: string; user: { id: string } }
  }
  return { idp, app, handle, signIn }
}

const status = async (app: FastifyInstance, url: string, token: string, method: 'GET' | 'DELETE' = 'GET') =>
  (await app.inject({ method, url, headers: bearer(token) })).statusCode
const refresh = (app: FastifyInstance, refreshToken: string) =>
  app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })

t.test('sign out everywhere, or everywhere else', async (t) => {
  const { app, signIn } = await setup(t)
  const [one, two, three] = [await signIn(ada), await signIn(ada), await signIn(ada)]
  const other = await signIn(bob)
  t.equal((await app.inject({ method: 'DELETE', url: '/api/auth/sessions?scope=some', headers: bearer(one.accessToken) })).statusCode, 400, 'an unknown scope')
  t.equal((await app.inject({ method: 'DELETE', url: '/api/auth/sessions?scope=others', headers: bearer(one.accessToken) })).statusCode, 204)
  t.equal(await status(app, '/api/auth/me', one.accessToken), 200, 'this session stays')
  t.same([await status(app, '/api/auth/me', two.accessToken), await status(app, '/api/auth/me', three.accessToken)], [401, 401], 'the others end at once')
  t.equal((await refresh(app, two.refreshToken)).statusCode, 401, 'and their refresh tokens are refused')
  t.equal(await status(app, '/api/auth/me', other.accessToken), 200, 'another user is untouched')
  t.equal(await status(app, '/api/auth/sessions', one.accessToken, 'DELETE'), 204, 'everywhere')
  t.equal(await status(app, '/api/auth/me', one.accessToken), 401, 'this one too')
})

t.test('two tabs refreshing with one token keep the session; a replay after the grace window is theft', async (t) => {
  const { app, signIn } = await setup(t, { REFRESH_REUSE_GRACE: '1500ms' })
  const first = await signIn(ada)
  // Several requests in flight at once with the same refresh token.
  const answers = await Promise.all(Array.from({ length: 4 }, () => refresh(app, first.refreshToken)))
  t.same(answers.map((a) => a.statusCode), [200, 200, 200, 200], 'every concurrent refresh gets a pair')
  const pairs = answers.map((a) => a.json() as { accessToken: string; refreshToken: string })
  const tokenId = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).tokenId
  t.equal(new Set(pairs.map((p) => tokenId(p.refreshToken))).size, 1, 'the one successor of the token: no fork')
  for (const p of pairs) t.equal(await status(app, '/api/auth/me', p.accessToken), 200, 'of a live session')
  const sid = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid
  t.equal(new Set(pairs.map((p) => sid(p.accessToken))).size, 1, 'the same session')
  t.equal((await refresh(app, pairs[1]!.refreshToken)).statusCode, 200, 'the successor works')

  await new Promise((resolve) => setTimeout(resolve, 1700))
  t.equal((await refresh(app, first.refreshToken)).statusCode, 401, 'a replay after the window')
  t.equal(await status(app, '/api/auth/me', pairs[0]!.accessToken), 401, 'ends the session')
  const history = (await app.inject({ url: '/api/auth/history', headers: bearer((await signIn(ada)).accessToken) })).json() as { events: { type: string; by?: string }[] }
  t.match(history.events.slice(1, 3), [{ type: 'session_revoked', by: 'reuse' }, { type: 'refresh_reuse' }], 'recorded as theft')
})

t.test('grace 0: any replay is theft, as before', async (t) => {
  const { app, signIn } = await setup(t, { REFRESH_REUSE_GRACE: '0' })
  const first = await signIn(ada)
  t.equal((await refresh(app, first.refreshToken)).statusCode, 200)
  t.equal((await refresh(app, first.refreshToken)).statusCode, 401)
})

t.test('the security history: newest first, pages, newIp, never a token', async (t) => {
  const { app, handle, signIn } = await setup(t)
  const a = await signIn(ada, '203.0.113.7')
  await signIn(ada, '203.0.113.7')
  const c = await signIn(ada, '198.51.100.1')
  await setRole(handle.db, ada.id, 'ADMIN')
  t.equal(await status(app, `/api/auth/sessions/${JSON.parse(Buffer.from(a.accessToken.split('.')[1]!, 'base64url').toString()).sid}`, c.accessToken, 'DELETE'), 204)
  const all = (await app.inject({ url: '/api/auth/history', headers: bearer(c.accessToken) })).json() as { events: Record<string, unknown>[]; nextCursor: string | null }
  t.match(all.events, [
    { type: 'session_revoked', by: 'self' },
    { type: 'role_changed', from: 'USER', to: 'ADMIN', by: 'cli' },
    { type: 'signin', ip: '198.51.100.1', userAgent: 'tap', newIp: true },
    { type: 'signin', ip: '203.0.113.7', newIp: false },
    { type: 'signin', ip: '203.0.113.7', newIp: true }
  ])
  t.equal(all.nextCursor, null)
  const text = JSON.stringify(all)
  for (const secret of [a.accessToken, a.refreshToken, c.refreshToken, 'good']) t.notOk(text.includes(`"${secret}"`), 'no token or code')

  const pages: string[] = []
  let cursor: string | null = null
  do {
    const res = await app.inject({ url: `/api/auth/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: bearer(c.accessToken) })
    const body = res.json() as { events: { type: string }[]; nextCursor: string | null }
    pages.push(body.events.map((e) => e.type).join(','))
    cursor = body.nextCursor
  } while (cursor)
  t.same(pages, ['session_revoked,role_changed', 'signin,signin', 'signin'], 'paged by two')
  for (const bad of ['limit=0', 'limit=1001', 'cursor=nope', `cursor=${Buffer.from('h:1;DROP').toString('base64url')}`]) {
    const res = await app.inject({ url: `/api/auth/history?${bad}`, headers: bearer(c.accessToken) })
    t.equal(res.statusCode, 400, bad)
  }
  t.equal((await signIn(bob)) && (await app.inject({ url: '/api/auth/history', headers: bearer((await signIn(bob)).accessToken) })).json().events.length, 2, 'only the caller\'s own events')
})

t.test('the admin API', async (t) => {
  const { app, handle, signIn } = await setup(t)
  const admin = await signIn(ada)
  const user = await signIn(bob)
  t.same([await status(app, '/api/admin/users', admin.accessToken), await status(app, '/api/admin/audit', user.accessToken)], [403, 403], 'role ADMIN only')
  t.equal((await app.inject({ url: '/api/admin/users?limit=0', headers: bearer(user.accessToken) })).statusCode, 403, 'refused before the parameters are judged')
  await setRole(handle.db, ada.id, 'ADMIN')
  app.profiles.invalidate(admin.user.id)
  const found = (await app.inject({ url: '/api/admin/users?q=BO', headers: bearer(admin.accessToken) })).json()
  t.match(found, { users: [{ username: 'bob', role: 'USER' }], limit: 50, offset: 0 })
  t.same((await app.inject({ url: '/api/admin/users?q=%25', headers: bearer(admin.accessToken) })).json().users, [], 'LIKE characters are literal')
  const one = (await app.inject({ url: `/api/admin/users/${user.user.id}`, headers: bearer(admin.accessToken) })).json()
  t.match(one, { user: { username: 'bob', guilds: [{ id: '900000000000000001' }] }, sessions: [{ ip: '127.0.0.1' }] })
  t.equal(await status(app, '/api/admin/users/not-a-user', admin.accessToken), 404)

  const promote = await app.inject({ method: 'PATCH', url: `/api/admin/users/${user.user.id}`, headers: bearer(admin.accessToken), payload: { role: 'ADMIN' } })
  t.match([promote.statusCode, promote.json()], [200, { username: 'bob', role: 'ADMIN' }])
  t.equal(await status(app, '/api/admin/users', user.accessToken), 200, 'effective at the next request, same token')
  const demoteSelf = await app.inject({ method: 'PATCH', url: `/api/admin/users/${admin.user.id}`, headers: bearer(admin.accessToken), payload: { role: 'USER' } })
  t.equal(demoteSelf.statusCode, 200, 'one of two admins may step down')
  const last = await app.inject({ method: 'PATCH', url: `/api/admin/users/${user.user.id}`, headers: bearer(user.accessToken), payload: { role: 'USER' } })
  t.same([last.statusCode, last.json().message], [409, 'The last ADMIN cannot be demoted'])
  t.equal(await status(app, '/api/admin/users', admin.accessToken), 403, 'the demoted admin lost the admin API')

  t.equal(await status(app, `/api/admin/users/${admin.user.id}/sessions`, user.accessToken, 'DELETE'), 204)
  t.equal(await status(app, '/api/auth/me', admin.accessToken), 401, 'signed out everywhere by an admin')
  const trail = (await app.inject({ url: `/api/admin/audit?userId=${admin.user.id}`, headers: bearer(user.accessToken) })).json() as { events: Record<string, unknown>[] }
  t.match(trail.events.slice(0, 2), [{ type: 'session_revoked', by: 'admin', userId: admin.user.id, adminId: user.user.id }, { type: 'signout_all', by: 'admin', adminId: user.user.id }])
  const roles = (await app.inject({ url: '/api/admin/audit?type=role_changed', headers: bearer(user.accessToken) })).json() as { events: Record<string, unknown>[] }
  t.match(roles.events, [
    { type: 'role_changed', userId: admin.user.id, from: 'ADMIN', to: 'USER', by: 'admin', adminId: admin.user.id },
    { type: 'role_changed', userId: user.user.id, from: 'USER', to: 'ADMIN', by: 'admin', adminId: admin.user.id },
    { type: 'role_changed', userId: admin.user.id, from: 'USER', to: 'ADMIN', by: 'cli', adminId: null }
  ])
  t.equal((await app.inject({ url: '/api/admin/audit?type=nope', headers: bearer(user.accessToken) })).statusCode, 400)
})

t.test('your data: export and delete', async (t) => {
  const { app, signIn } = await setup(t)
  const first = await signIn(ada)
  const second = await signIn(ada)
  const exported = await app.inject({ url: '/api/auth/me/export', headers: bearer(second.accessToken) })
  t.equal(exported.statusCode, 200)
  t.match(exported.headers['content-disposition'], /attachment/)
  t.match(exported.json(), { user: { username: 'ada' }, guilds: [{ id: '900000000000000001' }], history: [{ type: 'signin' }, { type: 'signin' }] })
  t.equal(exported.json().sessions.length, 2)
  for (const token of [first.accessToken, first.refreshToken, second.refreshToken]) t.notOk(exported.body.includes(token), 'no token in the export')

  t.equal(await status(app, '/api/auth/me', second.accessToken, 'DELETE'), 204)
  t.same([await status(app, '/api/auth/me', first.accessToken), await status(app, '/api/auth/me', second.accessToken)], [401, 401], 'every session ends')
  t.equal((await refresh(app, first.refreshToken)).statusCode, 401)
  const again = await signIn(ada)
  t.not(again.user.id, first.user.id, 'the next sign-in is a new account')
  const history = (await app.inject({ url: '/api/auth/history', headers: bearer(again.accessToken) })).json() as { events: { type: string; newIp: boolean }[] }
  t.match(history.events, [{ type: 'signin', newIp: true }], 'the old history is gone')
})
