import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, preParsingHookHandler } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { requiredDurationMs } from '../../lib/duration.ts'
import { clientKey } from '../../lib/address-group.ts'
import LocalStore from '@fastify/rate-limit/store/LocalStore.js'
import RedisStore from '@fastify/rate-limit/store/RedisStore.js'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    // The stricter budget of the sign-in and token routes: one limiter that every route of the group shares.
    authRateLimit: preParsingHookHandler
  }
}

// Client addresses the in-process counters remember: past it the least recently seen is forgotten
// (and would start afresh). Sized for the documented scale: 100,000 clients a window, about 15 MB.
export const LOCAL_CLIENTS = 100_000

interface StoreParams { continueExceeding?: boolean; exponentialBackoff?: boolean }

/**
 * The counters: in Redis while it answers (shared by every instance), in this instance's memory while
 * it does not, so that an outage narrows the limit to one instance instead of switching it off. Both
 * are @fastify/rate-limit's own stores, the library's counting unchanged.
 */
export function fallbackStore (redis: Redis | null, nameSpace: string) {
  return class FallbackStore {
    readonly local: RateLimitStore
    readonly shared: RateLimitStore | null
    constructor (params: StoreParams, local?: RateLimitStore, shared?: RateLimitStore | null) {
      this.local = local ?? new LocalStore(params.continueExceeding ?? false, params.exponentialBackoff ?? false, LOCAL_CLIENTS)
      this.shared = shared !== undefined ? shared : redis ? new RedisStore(params.continueExceeding ?? false, params.exponentialBackoff ?? false, redis, nameSpace) : null
    }

    incr (key: string, callback: (err: Error | null, result?: RateLimitResult) => void, timeWindow: number, max: number): void {
      this.#use('incr', key, callback, timeWindow, max)
    }

    read (key: string, callback: (err: Error | null, result?: RateLimitResult) => void, timeWindow: number, max: number): void {
      this.#use('read', key, callback, timeWindow, max)
    }

    #use (method: 'incr' | 'read', key: string, callback: (err: Error | null, result?: RateLimitResult) => void, timeWindow: number, max: number): void {
      if (!this.shared || redis?.status !== 'ready') {
        this.local[method](key, callback, timeWindow, max)
        return
      }
      this.shared[method](key, (err, result) => {
        if (err) this.local[method](key, callback, timeWindow, max)
        else callback(null, result ?? undefined)
      }, timeWindow, max)
    }

    child (routeOptions: StoreParams & object) {
      return new FallbackStore(routeOptions, this.local.child(routeOptions), this.shared?.child(routeOptions) ?? null)
    }
  }
}

/**
 * RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW per client (request.ip under TRUST_PROXY; IPv6 clients
 * grouped by /64) on every route that does not opt out, and AUTH_RATE_LIMIT_MAX on /api/auth/* (the
 * routes/api/auth folder adds that limiter). With Redis the counters are shared by every instance; while
 * Redis does not answer, each instance counts on its own (the fallback store above).
 */
export default fp(async function rateLimitPlugin (app: FastifyInstance) {
  const { config } = app
  const timeWindow = requiredDurationMs('RATE_LIMIT_WINDOW', config.RATE_LIMIT_WINDOW)
  // rate_limit_refusals_total{limit}: each 429 of either limit.
  const refused = app.appMetrics.rateLimited
  const key = clientKey()
  await app.register(rateLimit, {
    global: true,
    // After every onRequest hook (security headers, metrics, load shedding see the refusals too), before any body is read.
    hook: 'preParsing',
    max: config.RATE_LIMIT_MAX,
    timeWindow,
    store: fallbackStore(app.redis, 'rate-limit:'),
    // The library's own grouping (an IPv6 client by its /64, a mapped IPv4 address as IPv4), remembered per
    // address instead of worked out again on every request (lib/address-group.ts).
    keyGenerator: (request) => key(request.ip),
    // The seed's 429 body, rendered by the error handler like every other error.
    errorResponseBuilder: () => new HttpError(429, 'Rate limit exceeded'),
    onExceeded: () => refused.inc({ limit: 'global' })
  })
  const auth = app.rateLimit({ max: config.AUTH_RATE_LIMIT_MAX, timeWindow, onExceeded: () => refused.inc({ limit: 'auth' }) })
  app.decorate('authRateLimit', auth as unknown as preParsingHookHandler)
}, { name: 'rate-limit', dependencies: ['config', 'redis', 'metrics'] })
