import t from 'tap'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { setRole } from '../../db/auth.ts'
import { DEMO_GUILD_ID, DEMO_USERS } from '../../lib/dev-idp/demo-data.ts'

// Every analytics endpoint has something to show on the sample data, with its default parameters, on
// PostgreSQL and on the embedded database alike.
for (const kind of ['postgres', 'pglite'] as const) {
  t.test(`the sample data answers every analytics endpoint on ${kind}`, async (t) => {
    const idp = await new StandInIdp().start()
    t.teardown(() => idp.stop())
    const handle = await openTestDatabase(t, { kind, sample: true })
    const app = await buildTestApp(t, handle, {}, idp.env())
    idp.guilds = []
    await app.inject('/api/auth/identity?code=ok')
    await setRole(handle.db, idp.user.id, 'ADMIN')
    const token = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
    const get = async (url: string) => {
      const res = await app.inject({ url, headers: { authorization: `Bearer ${token}` } })
      t.equal(res.statusCode, 200, url)
      return res.json()
    }
    const g = `guildId=${DEMO_GUILD_ID}`
    t.ok((await get(`/api/lurkers?${g}`)).count > 0, 'lurkers')
    const heat = await get(`/api/heatmap?${g}&timeZone=Europe/Paris`)
    t.ok(heat.channels.length > 0 && heat.cells.length > 0, 'heatmap')
    t.ok((await get(`/api/roles?${g}`)).members.some((m: { drift: boolean }) => m.drift), 'role drift')
    const clients = await get(`/api/clients?${g}`)
    t.ok(clients.clients.every((c: { users: number }) => c.users > 0), 'every client kind this week')
    t.ok(clients.newClients.length > 0, 'new devices this week')
    const shifts = await get(`/api/shifts?${g}`)
    t.ok(shifts.members.some((m: { direction: string }) => m.direction === 'up'), 'shifts up')
    t.ok(shifts.members.some((m: { direction: string }) => m.direction === 'down'), 'shifts down')
    const week = new Date(Date.now() - 7 * 86_400_000).toISOString()
    const suspicion = await get(`/api/suspicion?${g}&since=${week}`)
    t.ok(suspicion.members.length > 0, 'suspicion')
    const timeline = await get(`/api/members/${DEMO_USERS[0].id}/activity?${g}&limit=5`)
    t.equal(timeline.events.length, 5, 'a demo user\'s timeline')
    t.ok(timeline.nextCursor)
  })
}
