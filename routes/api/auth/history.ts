import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { HistoryQuery, HistoryResponse } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { decodeCursor, page } from '../../../lib/auth/history.ts'
import { auditEvents } from '../../../db/auth.ts'
import { bearer } from './shared.ts'

const history: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/history', {
    schema: {
      tags: ['Auth'],
      operationId: 'getSecurityHistory',
      summary: 'The caller\'s security history',
      description: 'Sign-ins (with `newIp` on the first from an address), refresh-token reuse, revoked sessions and by whom, role changes, sign-outs everywhere: newest first, a page of `limit` at a time. ' +
        'Kept AUDIT_RETENTION (90 days by default). Never a token, code or secret.',
      security: bearer,
      querystring: HistoryQuery,
      response: {
        200: answer(HistoryResponse, 'A page of the caller\'s security events, newest first'),
        ...errors(fail(400, 'A bad limit, or a cursor this server did not make', 'Invalid cursor'), 401, 429, 503)
      }
    }
  }, async (request) => {
    const { limit, cursor } = request.query
    const before = cursor === undefined ? undefined : decodeCursor(cursor)
    if (before === null) throw new HttpError(400, 'Invalid cursor')
    const rows = await auditEvents(app.db, { userId: request.auth!.userId, before, limit: limit + 1 })
    // Each event's own fields come from the stored row, as the schema lists them.
    return page(rows, limit) as Static<typeof HistoryResponse>
  })
}

export default history
