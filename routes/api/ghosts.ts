import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from '../../lib/typebox.ts'
import { answer, errors, fail, Nullable } from '../../schemas/common.ts'
import { HttpError } from '../../lib/errors.ts'
import { parseInstant } from '../../lib/activity/instant.ts'
import { resolveWindow } from '../../lib/activity/analytics.ts'
import { canReadGuild, ghostsForGuild } from '../../db/activity.ts'
import { ghostsInWindow } from '../../db/analytics.ts'
import { SINCE_EXAMPLE, UNTIL_EXAMPLE } from '../../schemas/analytics.ts'

const Ghost = Type.Object({
  userId: Type.String({ description: 'User id at the identity provider', examples: ['800000000000004242'] }),
  username: Type.String({ description: 'Username of the user\'s latest event in the guild', examples: ['quill42'] }),
  typingCount: Type.Integer({ minimum: 1, examples: [40] }),
  messageCount: Type.Integer({ minimum: 0, examples: [1] }),
  ghostScore: Type.Number({ description: 'typingCount / (messageCount + 1), unrounded', examples: [20] })
}, { title: 'Ghost', additionalProperties: false })

const GhostsResponse = Type.Object({
  guildId: Type.String({ examples: ['700000000000000001'] }),
  since: Nullable(Type.String({ format: 'date-time', description: 'The `since` applied, as an ISO 8601 UTC instant; null without `since`' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'The `until` applied (exclusive), as an ISO 8601 UTC instant; present only when `until` was given' })),
  ghosts: Type.Array(Ghost),
  count: Type.Integer({ minimum: 0, description: 'Number of entries in `ghosts`' })
}, {
  title: 'Ghosts',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: '2025-12-01T00:00:00.000Z',
    until: '2026-01-01T00:00:00.000Z',
    ghosts: [
      { userId: '800000000000004242', username: 'quill42', typingCount: 40, messageCount: 1, ghostScore: 20 },
      { userId: '100000000000000003', username: 'linus', typingCount: 12, messageCount: 5, ghostScore: 2 }
    ],
    count: 2
  }]
})

const ghosts: FastifyPluginAsyncTypebox = async (app) => {
  // The guild rule: 403 for a caller who may not read the guild's analytics.
  const readable = async (auth: FastifyRequest['auth'], guildId: string) => {
    if (!auth) throw new HttpError(401, 'Missing authorization header')
    if (!(await canReadGuild(app.db, { userId: auth.userId, guildId }))) throw new HttpError(403, 'Insufficient permissions')
  }
  app.get('/ghosts', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listGuildGhosts',
      summary: 'Ghosts of a guild: members who type but do not post',
      description: [
        'Over the guild\'s typing and message events (only those at or after `since`, and before `until`, when given), every user',
        'with at least one typing event gets `ghostScore = typingCount / (messageCount + 1)`. Sorted by ghostScore, then typingCount (both',
        'descending), then userId; at most `limit` entries. `username` is the one of the user\'s latest event in the guild.',
        '',
        '**Permission:** a caller with role `ADMIN`, or who owns the guild or holds ADMINISTRATOR (0x8) or MANAGE_GUILD',
        '(0x20) in it according to the guild list stored at their sign-in. Anyone else, including a caller without that',
        'guild in their list, gets 403 `Insufficient permissions`.',
        '',
        '`since` is an ISO 8601 date-time such as `2025-12-01T18:30:00Z` or `2025-12-01T18:30:00+02:00`; a time without',
        'a zone is UTC, and a date alone (`2025-12-01`) means its midnight UTC. `until` is read the same way and ends the',
        'window `[since, until)` as on the other analytics routes (`since >= until` is 400); the answer then echoes it. Without',
        '`until` the window is open-ended, and the answer has no `until`, as the route has always answered.'
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: Type.Object({
        guildId: Type.String({ minLength: 1, maxLength: 64, description: 'Guild id at the identity provider', examples: ['700000000000000001'] }),
        since: Type.Optional(Type.String({ maxLength: 64, description: 'Only events at or after this instant (ISO 8601)', examples: [SINCE_EXAMPLE] })),
        until: Type.Optional(Type.String({ maxLength: 64, description: 'Only events before this instant (ISO 8601, exclusive); default: no end', examples: [UNTIL_EXAMPLE] })),
        // Optional in the document; the validator fills in the default.
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'At most this many ghosts (1..1000, default 100)', examples: [10] }))
      }),
      response: {
        200: answer(GhostsResponse, 'The guild\'s ghosts, highest ghostScore first'),
        ...errors(
          fail(400, 'guildId is missing, or since, until or limit is malformed or out of range, or since >= until',
            'querystring must have required property \'guildId\'', 'querystring/since must be an ISO 8601 date-time', 'querystring/since must be before until', 'querystring/limit must be <= 1000'),
          401,
          fail(403, 'The caller may not read this guild\'s analytics', 'Insufficient permissions'),
          429, 503)
      }
    }
  }, async (request) => {
    const { guildId, since, until, limit = 100 } = request.query
    if (until !== undefined) {
      // A closed window, read as every analytics route reads its window.
      const window = resolveWindow({ since, until }, Date.now())
      if (typeof window === 'string') throw new HttpError(400, window)
      await readable(request.auth, guildId)
      const list = await ghostsInWindow(app.db, { guildId, ...window, limit })
      return { guildId, since: window.since === null ? null : new Date(window.since).toISOString(), until: new Date(window.until).toISOString(), ghosts: list, count: list.length }
    }
    let sinceDate: Date | null = null
    if (since !== undefined) {
      const ms = parseInstant(since, { requireZone: false, allowDateOnly: true })
      if (ms === null) throw new HttpError(400, 'querystring/since must be an ISO 8601 date-time')
      sinceDate = new Date(ms)
    }
    await readable(request.auth, guildId)
    const list = await ghostsForGuild(app.db, { guildId, since: sinceDate, limit })
    return { guildId, since: sinceDate?.toISOString() ?? null, ghosts: list, count: list.length }
  })
}

export default ghosts
