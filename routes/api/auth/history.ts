import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { HistoryQuery, HistoryResponse } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { historyCursors, page } from '../../../lib/auth/history.ts'
import { auditEvents } from '../../../db/auth.ts'
import { bearer } from './shared.ts'

const history: FastifyPluginAsyncTypebox = async (app) => {
  const cursors = historyCursors('history', app.config.JWT_SECRET)
  app.get('/history', {
    schema: {
      tags: ['Auth'],
      operationId: 'getSecurityHistory',
      summary: 'The caller\'s security history',
      description: 'Sign-ins (with `newIp` on the first from an address), refresh-token reuse, revoked sessions and by whom, role changes, sign-outs everywhere: newest first, a page of `limit` at a time. ' +
        'Kept AUDIT_RETENTION (90 days by default). Never a token, code or secret. `nextCursor` is opaque and sealed: it is good only ' +
        'for the caller it was given to and the same `limit`; any other cursor is 400.',
      security: bearer,
      querystring: HistoryQuery,
      response: {
        200: answer(HistoryResponse, 'A page of the caller\'s security events, newest first'),
        ...errors(fail(400, 'A bad limit, or a cursor this server did not make', 'Invalid cursor'), 401, 429, 503)
      }
    }
  }, async (request) => {
    const { limit, cursor } = request.query
    const { userId } = request.auth!
    // A cursor is the caller's own, for this limit.
    const scope = JSON.stringify([userId, limit])
    const before = cursor === undefined ? undefined : cursors.decode(cursor, scope)
    if (before === null) throw new HttpError(400, 'Invalid cursor')
    const rows = await auditEvents(app.db, { userId, before, limit: limit + 1 })
    // Each event's own fields come from the stored row, as the schema lists them.
    return page(rows, limit, { cursors, scope }) as Static<typeof HistoryResponse>
  })
}

export default history
