import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { errors, fail, rateLimitHeaders, retryAfter } from '../../../schemas/common.ts'
import { GUILD_EXAMPLE } from '../../../schemas/analytics.ts'
import { HttpError } from '../../../lib/errors.ts'
import { canReadGuild } from '../../../db/activity.ts'

const EXAMPLE_STREAM = [
  ': open', '',
  'event: activity', `data: {"guildId":"${GUILD_EXAMPLE}","events":3,"types":{"message":2,"typing":1},"lastEventAt":"2026-01-01T09:30:00.000Z"}`, '',
  ': keep-alive', '',
  'event: end', 'data: {"reason":"token expired"}', '', ''
].join('\n')

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/:guildId/events', {
    schema: {
      tags: ['Analytics'],
      operationId: 'streamGuildActivity',
      summary: 'The guild\'s new activity as it is stored (server-sent events)',
      description: [
        'A `text/event-stream` to read with `fetch` (an `EventSource` cannot send the bearer header). Within 2 s of any',
        'commit that stores events of the guild (the ingestion API or the CLI, on any instance) comes an `event: activity` whose',
        '`data` is `{"guildId", "events", "types": {<type>: n}, "lastEventAt"}`: what was stored since the previous message',
        '(`types` lists the types stored, `lastEventAt` is their greatest createdAt); at most one message a second, later',
        'commits merged into the next one. A comment line (`: keep-alive`) every 15 s. The stream ends with `event: end`,',
        '`data: {"reason"}`: `token expired` when the access token expires, `session revoked` when its session ends, `server',
        'stopping` when the server stops; reconnect with a fresh token. A client that takes nothing of the stream for 30 s while',
        'more than 16 KiB wait for it is cut off.',
        '',
        '**Permission:** the guild rule of the analytics routes (role `ADMIN`, or owner / ADMINISTRATOR / MANAGE_GUILD of the',
        'guild per the stored guild list), checked when the stream opens. At most `STREAM_MAX_PER_USER` (default 5) streams of',
        'one user open at once on an instance (the next is 429); each holds one of its address\'s connections',
        '(`MAX_CONNECTIONS_PER_ADDRESS`).'
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      params: Type.Object({
        guildId: Type.String({ minLength: 1, maxLength: 64, description: 'Guild id at the identity provider', examples: [GUILD_EXAMPLE] })
      }),
      response: {
        200: {
          description: 'The stream: comment lines, `activity` events, and a last `end` event',
          content: { 'text/event-stream': { schema: { type: 'string', description: 'Server-sent events (text/event-stream, UTF-8)', example: EXAMPLE_STREAM } } }
        },
        ...errors(
          fail(400, 'guildId is longer than 64 characters', 'params/guildId must NOT have more than 64 characters'),
          401,
          fail(403, 'The caller may not read this guild\'s analytics', 'Insufficient permissions'),
          {
            ...fail(429, 'Too many requests from this client IP in the current window, or the caller already holds STREAM_MAX_PER_USER open streams on this instance',
              'Rate limit exceeded', 'At most 5 event streams may be open per user (STREAM_MAX_PER_USER)'),
            headers: { ...rateLimitHeaders, ...retryAfter }
          },
          503)
      }
    }
  }, async (request, reply) => {
    const { guildId } = request.params
    const auth = request.auth!
    if (!(await canReadGuild(app.db, { userId: auth.userId, guildId }))) throw new HttpError(403, 'Insufficient permissions')
    const stream = app.activityStreams.open(request, reply, guildId)
    return reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache, no-transform')
      // Proxies such as nginx would otherwise hold the messages back.
      .header('x-accel-buffering', 'no')
      .send(stream)
  })
}

export default route
