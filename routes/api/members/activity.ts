import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { answer, Nullable } from '../../../schemas/common.ts'
import { analyticsErrors, echo, windowParams, rules, GUILD_EXAMPLE } from '../../../schemas/analytics.ts'
import { HttpError } from '../../../lib/errors.ts'
import { parseTypes, resolveWindow, timelineCursors, type TimelinePosition } from '../../../lib/activity/analytics.ts'
import { ACTIVITY_TYPES, CLIENT_KINDS } from '../../../lib/activity/event.ts'
import { memberEvents } from '../../../db/analytics.ts'

const TimelineItem = Type.Object({
  type: Type.Union(ACTIVITY_TYPES.map((t) => Type.Literal(t))),
  createdAt: Type.String({ format: 'date-time' }),
  id: Type.Optional(Type.String({ description: 'The event id given by the sender, when it gave one', examples: ['msg-1842'] })),
  channelId: Type.Optional(Type.String({ description: 'message, typing, message_delete, reaction; others when given', examples: ['720000000000000001'] })),
  latencyMs: Type.Optional(Type.Integer({ minimum: 0, description: 'reaction, when given', examples: [850] })),
  status: Type.Optional(Type.Union([Type.Literal('online'), Type.Literal('idle'), Type.Literal('dnd'), Type.Literal('offline')], { description: 'presence' })),
  clients: Type.Optional(Type.Array(Type.Union(CLIENT_KINDS.map((c) => Type.Literal(c))), { description: 'presence, as sent' })),
  roleId: Type.Optional(Type.String({ description: 'role_change', examples: ['730000000000000001'] })),
  change: Type.Optional(Type.Union([Type.Literal('added'), Type.Literal('removed')], { description: 'role_change' }))
}, { additionalProperties: false })

const MemberActivityResponse = Type.Object({
  ...echo,
  userId: Type.String({ examples: ['100000000000000001'] }),
  events: Type.Array(TimelineItem),
  nextCursor: Nullable(Type.String({ description: 'Pass as `cursor` (with the same other parameters) for the next page; null on the last page' }))
}, {
  title: 'MemberActivity',
  additionalProperties: false,
  examples: [{
    guildId: GUILD_EXAMPLE,
    userId: '100000000000000001',
    since: null,
    until: '2026-01-01T00:00:00.000Z',
    events: [
      { type: 'message', createdAt: '2025-12-31T21:04:10.000Z', id: 's1-9f', channelId: '720000000000000001' },
      { type: 'presence', createdAt: '2025-12-31T21:03:00.000Z', status: 'online', clients: ['desktop', 'mobile'] }
    ],
    nextCursor: null
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  // Cursors are sealed: with JWT_SECRET every instance reads the others'; without it, this process's own.
  const codec = timelineCursors(app.config.JWT_SECRET)
  app.get('/:userId/activity', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listMemberActivity',
      summary: 'One member\'s events in a guild, newest first, page by page',
      description: [
        'The member\'s events in the window, newest first (events of the same instant: the one stored last first), each with',
        'its type\'s fields (and `id` when the sender gave one). `types` filters by a comma list of types. A page holds `limit`',
        'events; `nextCursor` (opaque, sealed) gives the next page and is null on the page that holds the last event.',
        'A cursor must come back with the same parameters (`limit` included): another guild, member, window, types or limit,',
        'or a cursor this service did not issue, is 400. Without `until`, the first page fixes `until` to its now and the',
        'following pages keep it, so events arriving meanwhile do not shift the pages.',
        rules(),
        'Also allowed to the member themself: a caller whose provider id equals `userId`.'
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      params: Type.Object({
        userId: Type.String({ minLength: 1, maxLength: 64, description: 'The member\'s user id at the identity provider', examples: ['100000000000000001'] })
      }),
      querystring: Type.Object({
        ...windowParams,
        types: Type.Optional(Type.String({ maxLength: 200, description: `Comma list of types to keep (${ACTIVITY_TYPES.join(', ')})`, examples: ['message,reaction'] })),
        // No example: a cursor is the server's own (sealed, bound to the query), so any written here would be refused.
        cursor: Type.Optional(Type.String({ maxLength: 500, description: 'The `nextCursor` of the previous page (leave empty for the first page)' }))
      }),
      response: {
        200: answer(MemberActivityResponse, 'A page of the member\'s events, newest first'),
        ...analyticsErrors('querystring/types: unknown type "voice" (known: message, typing, message_delete, reaction, presence, role_change, join, leave)',
          'querystring/cursor is not a cursor of this query')
      }
    }
  }, async (request) => {
    const { guildId, since, until, limit = 100, types: typesText, cursor } = request.query
    const { userId } = request.params
    const types = parseTypes(typesText)
    if (typeof types === 'string') throw new HttpError(400, types)
    const checked = resolveWindow({ since, until }, Date.now())
    if (typeof checked === 'string') throw new HttpError(400, checked)
    // Everything but the cursor, normalised: a cursor works only with the query that issued it.
    const params = JSON.stringify([guildId, userId, checked.since, until === undefined ? null : checked.until, types, limit])
    let position: TimelinePosition | null = null
    if (cursor !== undefined) {
      position = codec.decode(cursor, params)
      if (position === null) throw new HttpError(400, 'querystring/cursor is not a cursor of this query')
    }
    const w = await app.analyticsWindow(request, {
      guildId,
      since,
      until: until ?? (position ? new Date(position.until).toISOString() : undefined),
      self: userId
    })
    const rows = await memberEvents(app.db, { guildId, userId, ...w, types, before: position, limit: limit + 1 })
    const page = rows.slice(0, limit)
    const last = page[page.length - 1]
    const nextCursor = rows.length > limit && last ? codec.encode({ at: last.createdAt, seq: last.seq, until: w.until }, params) : null
    const events = page.map((r) => {
      const e: Record<string, unknown> = { type: r.type, createdAt: new Date(r.createdAt).toISOString() }
      if (r.id !== null) e.id = r.id
      if (r.channelId !== null) e.channelId = r.channelId
      if (r.latencyMs !== null) e.latencyMs = r.latencyMs
      if (r.status !== null) e.status = r.status
      if (r.clients !== null) e.clients = r.clients
      if (r.roleId !== null) e.roleId = r.roleId
      if (r.change !== null) e.change = r.change
      return e
    })
    return {
      guildId,
      userId,
      since: w.since === null ? null : new Date(w.since).toISOString(),
      until: new Date(w.until).toISOString(),
      events: events as never,
      nextCursor
    }
  })
}

export default route
