import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors, Nullable } from '../../schemas/common.ts'
import { HttpError } from '../../lib/errors.ts'
import { canReadGuild, ghostsForGuild } from '../../db/activity.ts'

const Ghost = Type.Object({
  userId: Type.String({ examples: ['800000000000004242'] }),
  username: Type.String({ examples: ['quill42'] }),
  typingCount: Type.Integer({ examples: [40] }),
  messageCount: Type.Integer({ examples: [1] }),
  ghostScore: Type.Number({ description: 'typingCount / (messageCount + 1)', examples: [20] })
}, { title: 'Ghost' })

const GhostsResponse = Type.Object({
  guildId: Type.String(),
  since: Nullable(Type.String({ format: 'date-time' })),
  ghosts: Type.Array(Ghost),
  count: Type.Integer({ description: 'Number of entries in ghosts' })
})

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

const ghosts: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/ghosts', {
    onRequest: app.authenticate,
    schema: {
      tags: ['Analytics'],
      summary: 'Ghosts of a guild: members who type but do not post',
      description: 'Over the guild\'s typing and message events (since `since` when given), each user who typed gets ' +
        '`ghostScore = typingCount / (messageCount + 1)`; sorted by score, then typingCount (both descending), then userId. ' +
        'Needs a bearer token of a user who owns the guild or holds ADMINISTRATOR (0x8) or MANAGE_GUILD (0x20) in it per the guild list stored at sign-in, or of a user with role ADMIN; otherwise 403. ' +
        '`since` is an ISO 8601 date-time (a date alone means midnight UTC; a time without a zone is UTC).',
      security: [{ bearerAuth: [] }],
      querystring: Type.Object({
        guildId: Type.String({ minLength: 1, maxLength: 64, description: 'Guild id', examples: ['700000000000000001'] }),
        since: Type.Optional(Type.String({ maxLength: 40, description: 'Only events at or after this instant, e.g. 2025-12-01T00:00:00Z' })),
        limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'At most this many ghosts, 1..1000' })
      }),
      response: { 200: GhostsResponse, ...errors(400, 401, 403, 429, 503) }
    }
  }, async (request) => {
    const { guildId, since, limit } = request.query
    let sinceDate: Date | null = null
    if (since !== undefined) {
      const zoned = /T/.test(since) && !/(Z|[+-]\d{2}:?\d{2})$/.test(since) ? `${since}Z` : since
      sinceDate = ISO.test(since) ? new Date(zoned) : null
      if (!sinceDate || Number.isNaN(sinceDate.getTime())) throw new HttpError(400, 'querystring/since must be an ISO 8601 date-time')
    }
    if (!(await canReadGuild(app.db, request.auth!, guildId))) throw new HttpError(403, 'Insufficient permissions')
    const list = await ghostsForGuild(app.db, { guildId, since: sinceDate, limit })
    return { guildId, since: sinceDate?.toISOString() ?? null, ghosts: list, count: list.length }
  })
}

export default ghosts
