import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, userId, username, windowQuery } from '../../schemas/analytics.ts'
import { previousWindow, WEEK_MS } from '../../lib/activity/analytics.ts'
import { CLIENT_KINDS } from '../../lib/activity/event.ts'
import { clientUsers, newClients } from '../../db/analytics.ts'

const client = Type.Union(CLIENT_KINDS.map((c) => Type.Literal(c)), { description: 'Client kind' })
const ClientCount = Type.Object({
  client,
  users: Type.Integer({ minimum: 0, description: 'Distinct members with a presence listing this client in the window', examples: [40] }),
  previousUsers: Type.Integer({ minimum: 0, description: 'The same in the previous window of the same length', examples: [35] })
}, { additionalProperties: false })
const NewClient = Type.Object({
  userId,
  username,
  client,
  firstSeenAt: Type.String({ format: 'date-time', description: 'The member\'s first presence ever listing this client' })
}, { additionalProperties: false })

const ClientsResponse = Type.Object({ ...echo, clients: Type.Array(ClientCount), newClients: Type.Array(NewClient) }, {
  title: 'ClientDrift',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: '2025-12-25T00:00:00.000Z',
    until: '2026-01-01T00:00:00.000Z',
    clients: [{ client: 'desktop', users: 40, previousUsers: 35 }, { client: 'web', users: 9, previousUsers: 4 }, { client: 'mobile', users: 22, previousUsers: 21 }],
    newClients: [{ userId: '800000000000004242', username: 'quill42', client: 'web', firstSeenAt: '2025-12-27T18:03:00.000Z' }]
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/clients', {
    schema: {
      tags: ['Analytics'],
      operationId: 'getGuildClientDrift',
      summary: 'Client drift: members per kind of client, and known members on a new kind of device',
      description: [
        '`clients`: for desktop, web and mobile in that order, the distinct members with a presence event listing that client',
        'in the window (`users`) and in the previous window of the same length (`previousUsers`; a presence with no client',
        'counts for none). `newClients`: a member\'s first presence ever listing a client, when it falls in the window and',
        'the member had presence events before the window; sorted by firstSeenAt, userId, then client (desktop, web, mobile);',
        'at most `limit`.',
        rules(' (here: 7 days before `until`, echoed)')
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({}),
      response: {
        200: answer(ClientsResponse, 'Members per client now and before, and new devices of known members'),
        ...analyticsErrors('querystring/until must be an ISO 8601 date-time')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100 } = request.query
    const w = await app.analyticsWindow(request, { ...request.query, defaultSpanMs: WEEK_MS })
    const window = { guildId, since: w.since!, until: w.until }
    const [counts, fresh] = await Promise.all([
      clientUsers(app.db, { ...window, previousSince: previousWindow(window).since }),
      newClients(app.db, { ...window, limit })
    ])
    return {
      guildId,
      since: new Date(window.since).toISOString(),
      until: new Date(window.until).toISOString(),
      clients: CLIENT_KINDS.map((c) => ({ client: c, users: counts.get(c)?.users ?? 0, previousUsers: counts.get(c)?.previousUsers ?? 0 })),
      newClients: fresh as { userId: string; username: string; client: typeof CLIENT_KINDS[number]; firstSeenAt: string }[]
    }
  })
}

export default route
