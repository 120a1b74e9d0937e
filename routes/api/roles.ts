import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, userId, username, windowQuery } from '../../schemas/analytics.ts'
import { roleDrift } from '../../db/analytics.ts'

const RoleMember = Type.Object({
  userId,
  username,
  added: Type.Integer({ minimum: 0, description: '`role_change` events with change `added` in the window', examples: [3] }),
  removed: Type.Integer({ minimum: 0, description: '`role_change` events with change `removed` in the window', examples: [2] }),
  changes: Type.Integer({ minimum: 1, description: 'added + removed', examples: [5] }),
  drift: Type.Boolean({ description: 'changes >= 2' })
}, { additionalProperties: false })

const RolesResponse = Type.Object({ ...echo, members: Type.Array(RoleMember) }, {
  title: 'RoleDrift',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: '2025-12-01T00:00:00.000Z',
    until: '2026-01-01T00:00:00.000Z',
    members: [{ userId: '800000000000004242', username: 'quill42', added: 3, removed: 2, changes: 5, drift: true }]
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/roles', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listGuildRoleDrift',
      summary: 'Role drift: members whose roles changed in the window',
      description: [
        'Members with at least one `role_change` event in the window, with the numbers of roles added and removed',
        '(every event counts, the same role given and taken back included). `changes = added + removed`, `drift = changes >= 2`.',
        'Sorted by changes desc, then userId.',
        rules()
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({}),
      response: {
        200: answer(RolesResponse, 'Members with role changes, most changes first'),
        ...analyticsErrors('querystring/limit must be <= 1000')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100 } = request.query
    const w = await app.analyticsWindow(request, request.query)
    const members = await roleDrift(app.db, { guildId, ...w, limit })
    return { guildId, since: w.since === null ? null : new Date(w.since).toISOString(), until: new Date(w.until).toISOString(), members }
  })
}

export default route
