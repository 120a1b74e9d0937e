import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { resolveWindow, type Window } from '../../lib/activity/analytics.ts'
import { canReadGuild } from '../../db/activity.ts'

export interface AnalyticsAccess {
  guildId: string
  since?: string
  until?: string
  // The member whose own activity the caller may read without the guild permission.
  self?: string
  // Where since defaults to this long before until instead of the beginning of the data.
  defaultSpanMs?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The common rules of the analytics routes: the window [since, until) (400 for a malformed one or
     * since >= until), then the guild permission rule of ghosts (403 "Insufficient permissions"), or
     * the member themself when `self` is given.
     */
    analyticsWindow(request: FastifyRequest, access: AnalyticsAccess): Promise<Window>
  }
}

export default fp(async function analytics (app: FastifyInstance) {
  app.decorate('analyticsWindow', async (request: FastifyRequest, access: AnalyticsAccess) => {
    const window = resolveWindow(access, Date.now(), access.defaultSpanMs)
    if (typeof window === 'string') throw new HttpError(400, window)
    const auth = request.auth
    if (!auth) throw new HttpError(401, 'Missing authorization header')
    const own = access.self !== undefined && access.self === auth.providerId
    if (!own && !(await canReadGuild(app.db, { userId: auth.userId, guildId: access.guildId }))) {
      throw new HttpError(403, 'Insufficient permissions')
    }
    return window
  })
}, { name: 'analytics', dependencies: ['db'] })
