import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { AdminAuditQuery, HistoryResponse } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { historyCursors, page } from '../../../lib/auth/history.ts'
import { auditEvents } from '../../../db/auth.ts'
import { bearer } from '../auth/shared.ts'

const audit: FastifyPluginAsyncTypebox = async (app) => {
  const cursors = historyCursors('audit', app.config.JWT_SECRET)
  app.get('/audit', {
    config: { role: 'ADMIN' },
    schema: {
      tags: ['Admin'],
      operationId: 'adminReadAudit',
      summary: 'The audit trail',
      description: 'Every user\'s security events, newest first, each naming its `userId` and, for admin actions, the acting `adminId`; filtered by user, type and time. Kept AUDIT_RETENTION. ' +
        '`nextCursor` is opaque and sealed: it is good only with the same filters and `limit`; any other cursor is 400.',
      security: bearer,
      querystring: AdminAuditQuery,
      response: {
        200: answer(HistoryResponse, 'A page of the audit trail, newest first'),
        ...errors(fail(400, 'A bad filter or limit, or a cursor this server did not make', 'Invalid cursor'), 401, fail(403, 'The caller\'s role is not ADMIN', 'Insufficient permissions'), 429, 503)
      }
    }
  }, async (request) => {
    const { userId, type, since, limit, cursor } = request.query
    const from = since ? new Date(since) : undefined
    // A cursor is good only with the filters and limit of the query that made it.
    const scope = JSON.stringify([userId ?? null, type ?? null, from?.getTime() ?? null, limit])
    const before = cursor === undefined ? undefined : cursors.decode(cursor, scope)
    if (before === null) throw new HttpError(400, 'Invalid cursor')
    const rows = await auditEvents(app.db, { userId, type, since: from, before, limit: limit + 1 })
    return page(rows, limit, { cursors, scope }, true) as Static<typeof HistoryResponse>
  })
}

export default audit
