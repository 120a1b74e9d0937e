import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, userId, username, windowQuery } from '../../schemas/analytics.ts'
import { lurkers } from '../../db/analytics.ts'

const Lurker = Type.Object({
  userId,
  username,
  presenceCount: Type.Integer({ minimum: 1, description: 'Presence events in the window', examples: [12] }),
  lastPresenceAt: Type.String({ format: 'date-time', description: 'The latest presence event in the window' })
}, { additionalProperties: false })

const LurkersResponse = Type.Object({
  ...echo,
  lurkers: Type.Array(Lurker),
  count: Type.Integer({ minimum: 0, description: 'Number of entries in `lurkers`' })
}, {
  title: 'Lurkers',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: null,
    until: '2026-01-01T00:00:00.000Z',
    lurkers: [{ userId: '800000000000004242', username: 'quill42', presenceCount: 12, lastPresenceAt: '2025-12-30T19:04:11.000Z' }],
    count: 1
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/lurkers', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listGuildLurkers',
      summary: 'Lurkers of a guild: members who are present but never speak or react',
      description: [
        'Members with at least `minPresence` presence events in the window and no `message`, `typing` or `reaction` event in it',
        '(other types, such as a role change, do not make a member active). Sorted by presenceCount desc, then userId;',
        '`lastPresenceAt` is the latest presence in the window.',
        rules()
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({
        minPresence: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 5, description: 'Least number of presence events in the window (1..1000, default 5)', examples: [2] }))
      }),
      response: {
        200: answer(LurkersResponse, 'The guild\'s lurkers, most present first'),
        ...analyticsErrors('querystring/minPresence must be >= 1')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100, minPresence = 5 } = request.query
    const w = await app.analyticsWindow(request, request.query)
    const list = await lurkers(app.db, { guildId, ...w, minPresence, limit })
    return { guildId, since: w.since === null ? null : new Date(w.since).toISOString(), until: new Date(w.until).toISOString(), lurkers: list, count: list.length }
  })
}

export default route
