import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { DAY_MS, resolveWindow, type Window } from '../../lib/activity/analytics.ts'
import { canReadGuild } from '../../db/activity.ts'

export interface AnalyticsAccess {
  guildId: string
  since?: string
  until?: string
  // The member whose own activity the caller may read without the guild permission.
  self?: string
  // Where since defaults to this long before until instead of the beginning of the data.
  defaultSpanMs?: number
  // A window longer than this many days is 400.
  maxSpanDays?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The common rules of the analytics routes: the window [since, until) (400 for a malformed one,
     * since >= until, or one longer than maxSpanDays), then the guild permission rule (403 "Insufficient permissions"), or
     * the member themself when `self` is given.
     */
    analyticsWindow(request: FastifyRequest, access: AnalyticsAccess): Promise<Window>
  }
}

export default fp(async function analytics (app: FastifyInstance) {
  app.decorate('analyticsWindow', async (request: FastifyRequest, access: AnalyticsAccess) => {
    const window = resolveWindow(access, Date.now(), access.defaultSpanMs)
    if (typeof window === 'string') throw new HttpError(400, window)
    if (access.maxSpanDays !== undefined && window.since !== null && window.until - window.since > access.maxSpanDays * DAY_MS) {
      throw new HttpError(400, `querystring/since: the window from since to until must be at most ${access.maxSpanDays} days`)
    }
    const auth = request.auth
    if (!auth) throw new HttpError(401, 'Missing authorization header')
    const own = access.self !== undefined && access.self === auth.providerId
    if (!own && !(await canReadGuild(app.db, { userId: auth.userId, guildId: access.guildId }))) {
      throw new HttpError(403, 'Insufficient permissions')
    }
    return window
  })
}, { name: 'analytics', dependencies: ['db'] })
