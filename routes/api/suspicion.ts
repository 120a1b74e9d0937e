import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, userId, username, windowQuery } from '../../schemas/analytics.ts'
import { suspicion } from '../../lib/activity/analytics.ts'
import { suspects } from '../../db/analytics.ts'

const factor = (description: string, example: number) => Type.Number({ minimum: 0, maximum: 1, description, examples: [example] })
const Factors = Type.Object({
  ghost: factor('typing / (typing + messages); weight 0.25', 0.8),
  multiClient: factor('share of the member\'s presence events listing 2 or more clients; weight 0.20', 0.5),
  deletes: factor('min(message_delete / max(messages, 1), 1); weight 0.20', 0.25),
  roleChurn: factor('min(role changes / 5, 1); weight 0.15', 0.4),
  fastReactions: factor('share of reactions with latencyMs < 3000 among those with latencyMs; weight 0.10', 1),
  newcomer: factor('1 when the window has a since and the member\'s first event in the guild is in it; weight 0.10', 0)
}, { additionalProperties: false, description: 'Each factor over the window, rounded to 4 decimals' })
const Suspect = Type.Object({
  userId,
  username,
  score: Type.Integer({ minimum: 0, maximum: 100, description: 'round(100 x sum(weight x factor)) over the exact factors, half up', examples: [51] }),
  factors: Factors
}, { additionalProperties: false })

const SuspicionResponse = Type.Object({ ...echo, members: Type.Array(Suspect) }, {
  title: 'Suspicion',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: '2025-12-01T00:00:00.000Z',
    until: '2026-01-01T00:00:00.000Z',
    members: [{ userId: '800000000000004242', username: 'quill42', score: 51, factors: { ghost: 0.8, multiClient: 0.5, deletes: 0.25, roleChurn: 0.4, fastReactions: 1, newcomer: 0 } }]
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/suspicion', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listGuildSuspicion',
      summary: 'Suspicion score of the guild\'s members',
      description: [
        'Every member with an event in the window gets six factors in [0, 1] over the window and',
        '`score = round(100 x (0.25 ghost + 0.20 multiClient + 0.20 deletes + 0.15 roleChurn + 0.10 fastReactions + 0.10 newcomer))`,',
        'computed from the exact factors (exact fractions: a sum of exactly x.5 rounds up). Members with score >= `minScore`,',
        'sorted by score desc, then userId. The factors are echoed rounded to 4 decimals. `newcomer` is 0 for an open window',
        '(no `since`): a member\'s first event is then always in it, which says nothing. With `userId`, only that member is scored:',
        'the answer holds their entry (when they have an event in the window and score at least `minScore`) or none.',
        rules()
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({
        minScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: 1, description: 'Least score (0..100, default 1)', examples: [20] })),
        userId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only this member (user id at the identity provider): their entry alone, or none', examples: ['100000000000000001'] }))
      }),
      response: {
        200: answer(SuspicionResponse, 'Members by suspicion score, highest first'),
        ...analyticsErrors('querystring/minScore must be <= 100', 'querystring/userId must NOT have more than 64 characters')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100, minScore = 1, userId: member } = request.query
    const w = await app.analyticsWindow(request, request.query)
    // Scored, filtered, sorted and cut in the database; the factors of the answer's members echoed from their counts.
    const rows = await suspects(app.db, { guildId, ...w, minScore, limit, userId: member })
    const members = rows.map((r) => {
      const { factors } = suspicion(r)
      return { userId: r.userId, username: r.username, score: r.score, factors }
    })
    return { guildId, since: w.since === null ? null : new Date(w.since).toISOString(), until: new Date(w.until).toISOString(), members }
  })
}

export default route
