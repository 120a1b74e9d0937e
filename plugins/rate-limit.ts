import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import { HttpError } from '../lib/errors.ts'

/**
 * A global per-IP limit, a stricter one on /api/auth/*, none on the health check and the docs' assets.
 * With Redis the counters are shared by every instance; a Redis outage skips the limit rather than
 * failing requests (availability over strictness), and the shared counters return with Redis.
 */
export default fp(async function rateLimitPlugin(app: FastifyInstance) {
  const { config } = app
  // Runs before the rate-limit plugin's own onRoute hook, so its per-route settings are in place.
  app.addHook('onRoute', (route) => {
    const url = route.url ?? ''
    route.config ??= {}
    if (route.config.rateLimit !== undefined) return
    if (url === '/health' || url.startsWith('/api/docs')) route.config.rateLimit = false
    else if (url.startsWith('/api/auth')) route.config.rateLimit = { max: config.AUTH_RATE_LIMIT_MAX, timeWindow: config.RATE_LIMIT_WINDOW, groupId: 'auth' }
  })
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW,
    redis: app.redis ?? undefined,
    nameSpace: 'rate-limit:',
    skipOnError: true,
    // The plugin sets retry-after and x-ratelimit-* itself; the body follows the error contract.
    errorResponseBuilder: () => new HttpError(429, 'Rate limit exceeded')
  })
}, { name: 'rate-limit', dependencies: ['config', 'redis'] })
