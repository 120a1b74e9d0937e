import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, preParsingHookHandler } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { requiredDurationMs } from '../../lib/duration.ts'

declare module 'fastify' {
  interface FastifyInstance {
    // The stricter budget of the sign-in and token routes: one limiter that every route of the group shares.
    authRateLimit: preParsingHookHandler
  }
}

/**
 * RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per client (request.ip under TRUST_PROXY; IPv6 clients
 * grouped by /64) on every route that does not opt out, and AUTH_RATE_LIMIT_MAX on /api/auth/* (the
 * routes/api/auth folder adds that limiter). With Redis the counters are shared by every instance; a
 * Redis outage skips the limit rather than failing requests (availability over strictness).
 */
export default fp(async function rateLimitPlugin (app: FastifyInstance) {
  const { config } = app
  const timeWindow = requiredDurationMs('RATE_LIMIT_WINDOW', config.RATE_LIMIT_WINDOW)
  // rate_limit_refusals_total{limit}: each 429 of either limit.
  const refused = app.appMetrics.rateLimited
  await app.register(rateLimit, {
    global: true,
    // After every onRequest hook (security headers, metrics, load shedding see the refusals too), before any body is read.
    hook: 'preParsing',
    max: config.RATE_LIMIT_MAX,
    timeWindow,
    redis: app.redis ?? undefined,
    nameSpace: 'rate-limit:',
    skipOnError: true,
    // The seed's 429 body, rendered by the error handler like every other error.
    errorResponseBuilder: () => new HttpError(429, 'Rate limit exceeded'),
    onExceeded: () => refused.inc({ limit: 'global' })
  })
  const auth = app.rateLimit({ max: config.AUTH_RATE_LIMIT_MAX, timeWindow, onExceeded: () => refused.inc({ limit: 'auth' }) })
  app.decorate('authRateLimit', auth as unknown as preParsingHookHandler)
}, { name: 'rate-limit', dependencies: ['config', 'redis', 'metrics'] })
