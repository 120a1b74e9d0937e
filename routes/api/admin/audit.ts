import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { AdminAuditQuery, HistoryResponse } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { decodeCursor, page } from '../../../lib/auth/history.ts'
import { auditEvents } from '../../../db/auth.ts'
import { bearer } from '../auth/shared.ts'

const audit: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/audit', {
    config: { role: 'ADMIN' },
    schema: {
      tags: ['Admin'],
      operationId: 'adminReadAudit',
      summary: 'The audit trail',
      description: 'Every user\'s security events, newest first, each naming its `userId` and, for admin actions, the acting `adminId`; filtered by user, type and time. Kept AUDIT_RETENTION.',
      security: bearer,
      querystring: AdminAuditQuery,
      response: {
        200: answer(HistoryResponse, 'A page of the audit trail, newest first'),
        ...errors(fail(400, 'A bad filter or limit, or a cursor this server did not make', 'Invalid cursor'), 401, fail(403, 'The caller\'s role is not ADMIN', 'Insufficient permissions'), 429, 503)
      }
    }
  }, async (request) => {
    const { userId, type, since, limit, cursor } = request.query
    const before = cursor === undefined ? undefined : decodeCursor(cursor)
    if (before === null) throw new HttpError(400, 'Invalid cursor')
    const rows = await auditEvents(app.db, { userId, type, since: since ? new Date(since) : undefined, before, limit: limit + 1 })
    return page(rows, limit, true) as Static<typeof HistoryResponse>
  })
}

export default audit
