import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, userId, username, windowQuery } from '../../schemas/analytics.ts'
import { previousWindow, roundRatio, shiftDirection, WEEK_MS } from '../../lib/activity/analytics.ts'
import { shiftCounts } from '../../db/analytics.ts'

const Shift = Type.Object({
  userId,
  username,
  current: Type.Integer({ minimum: 0, description: 'message + typing events in the window', examples: [64] }),
  previous: Type.Integer({ minimum: 0, description: 'message + typing events in the previous window of the same length', examples: [12] }),
  change: Type.Number({ description: '(current - previous) / max(previous, 1), rounded to 4 decimals', examples: [4.3333] }),
  direction: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('steady')], { description: 'up: current >= 2 x previous; down: current <= previous / 2; else steady' })
}, { additionalProperties: false })

const ShiftsResponse = Type.Object({ ...echo, members: Type.Array(Shift) }, {
  title: 'BehaviourShifts',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: '2025-12-25T00:00:00.000Z',
    until: '2026-01-01T00:00:00.000Z',
    members: [{ userId: '800000000000004242', username: 'quill42', current: 64, previous: 12, change: 4.3333, direction: 'up' }]
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/shifts', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listGuildBehaviourShifts',
      summary: 'Behaviour shifts: members much more or much less active than in the window before',
      description: [
        'Per member, `current` = message + typing events in the window, `previous` = the same in the previous window of the',
        'same length (`[since - (until - since), since)`); members with current + previous >= `minEvents`.',
        '`change = (current - previous) / max(previous, 1)`; `direction` is `up` when current >= 2 x previous, `down` when',
        'current <= previous / 2, else `steady`. Sorted by |current - previous| desc, then userId.',
        rules(' (here: 7 days before `until`, echoed)')
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({
        minEvents: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, default: 10, description: 'Least current + previous (1..100000, default 10)', examples: [5] }))
      }),
      response: {
        200: answer(ShiftsResponse, 'Members by size of their change'),
        ...analyticsErrors('querystring/minEvents must be <= 100000')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100, minEvents = 10 } = request.query
    const w = await app.analyticsWindow(request, { ...request.query, defaultSpanMs: WEEK_MS })
    const window = { guildId, since: w.since!, until: w.until }
    const rows = await shiftCounts(app.db, { ...window, previousSince: previousWindow(window).since, minEvents, limit })
    return {
      guildId,
      since: new Date(window.since).toISOString(),
      until: new Date(window.until).toISOString(),
      members: rows.map((r) => ({ ...r, change: roundRatio(r.current - r.previous, Math.max(r.previous, 1)), direction: shiftDirection(r.current, r.previous) }))
    }
  })
}

export default route
