import fp from 'fastify-plugin'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler } from 'fastify'
import { HttpError } from '../lib/errors.ts'
import { LocalCounters, RedisCounters, windowMs, type Hit } from '../lib/rate-limit.ts'
import { addRouteHook } from '../lib/route-hooks.ts'

export type RateLimitSetting = false | { max: number; group: string }

declare module 'fastify' {
  interface FastifyContextConfig {
    // false: not limited; otherwise the limit of a named group with its own budget.
    rateLimit?: RateLimitSetting
  }
  interface FastifyRequest {
    // This request's standing against its limit, as header values; null where no limit applied.
    rateLimit: RateLimitHeaders | null
  }
  interface FastifyInstance {
    /**
     * Counts a raw request against a limit before Fastify sees it (the front door): the headers to send,
     * or null when the count could not be made (Redis away), and whether the limit is exceeded. An
     * exceeded request goes on to Fastify, whose limiter then answers 429 without counting it again.
     */
    countRequest(setting: { max: number; group: string }, req: IncomingMessage, counted: (headers: RateLimitHeaders | null, exceeded: boolean) => void): void
  }
}

// A count already made for a raw request by the front door.
const kCounted = Symbol('rate-limit count')
type CountedRequest = IncomingMessage & { [kCounted]?: Hit }

export type RateLimitHeaders = {
  'x-ratelimit-limit': string
  'x-ratelimit-remaining': string
  'x-ratelimit-reset': string
}

/**
 * Adds the request's x-ratelimit-* headers to a headers object: for an answer written straight to the
 * socket (a cached hit), which no onSend hook sees.
 */
export function writeRateLimitHeaders(request: FastifyRequest, headers: Record<string, unknown>): void {
  if (request.rateLimit !== null) Object.assign(headers, request.rateLimit)
}

// Every other answer gets them here (route-level onSend, so unlimited routes run no code for it).
const sendRateLimitHeaders: onSendHookHandler = (request, reply, payload, done) => {
  if (request.rateLimit !== null) reply.headers(request.rateLimit)
  done(null, payload)
}

/**
 * A global per-IP limit, a stricter one on /api/auth/*, none on the health check, the docs and CORS
 * preflights. Fixed windows of RATE_LIMIT_WINDOW; every limited answer carries x-ratelimit-limit,
 * -remaining and -reset (seconds), and a refused one 429 {error, message} with retry-after. With Redis
 * the counters are shared by every instance; a Redis outage skips the limit rather than failing
 * requests (availability over strictness), and the shared counters return with Redis.
 *
 * Written out rather than through @fastify/rate-limit: the same contract at about a third of its
 * per-request cost (its promise chain measured 8–10 µs per request, as much as a cached answer's own work).
 */
export default fp(async function rateLimitPlugin(app: FastifyInstance) {
  const { config } = app
  const window = windowMs(config.RATE_LIMIT_WINDOW)
  if (window === null) throw new Error(`invalid configuration: RATE_LIMIT_WINDOW is not a duration (got ${JSON.stringify(config.RATE_LIMIT_WINDOW)})`)
  const local = new LocalCounters()
  const shared = app.redis ? new RedisCounters(app.redis, 'rate-limit:') : null
  app.addHook('onClose', async () => local.close())
  let warned = false

  // Counted in Redis, or null when Redis does not answer: an outage skips the limit. Without Redis the
  // local counters answer at once, called directly on the hot paths below (no callback per request).
  const countShared = (key: string): Promise<Hit | null> => shared!.hit(key, window).catch((err: unknown) => {
    if (!warned) app.log.warn({ err }, 'rate limiting skipped: Redis does not answer')
    warned = true
    return null
  })
  const headersOf = (max: number, hit: Hit): RateLimitHeaders => ({
    'x-ratelimit-limit': String(max),
    'x-ratelimit-remaining': String(Math.max(0, max - hit.count)),
    'x-ratelimit-reset': String(Math.max(0, Math.ceil(hit.ttlMs / 1000)))
  })

  const limiter = (max: number, group: string): onRequestHookHandler => {
    // The headers are only recorded here and written on the way out (by sendRateLimitHeaders, or by the
    // response cache for a hit): three reply.header() calls per request, and the larger header object they
    // make for every later step, cost a cached answer about 2 µs, a tenth of it.
    const apply = (request: FastifyRequest, reply: FastifyReply, hit: Hit | null, done: (err?: Error) => void) => {
      if (hit === null) {
        done()
        return
      }
      request.rateLimit = headersOf(max, hit)
      if (hit.count > max) {
        reply.header('retry-after', request.rateLimit['x-ratelimit-reset'])
        done(new HttpError(429, 'Rate limit exceeded'))
        return
      }
      done()
    }
    return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      const raw = request.raw as CountedRequest
      if (raw[kCounted] !== undefined) apply(request, reply, raw[kCounted], done)
      else if (shared === null) apply(request, reply, local.hit(`${group}:${request.ip}`, window), done)
      else void countShared(`${group}:${request.ip}`).then((hit) => apply(request, reply, hit, done))
    }
  }
  app.decorateRequest('rateLimit', null)
  type Counted = (headers: RateLimitHeaders | null, exceeded: boolean) => void
  const frontCounted = (setting: { max: number; group: string }, req: IncomingMessage, hit: Hit | null, counted: Counted) => {
    if (hit === null) {
      counted(null, false)
      return
    }
    const exceeded = hit.count > setting.max
    // Only a refused request carries its count on to Fastify: a property added to every request object
    // changes its shape, which cost Node's own HTTP code about 15 µs a request, more than the answer itself.
    if (exceeded) (req as CountedRequest)[kCounted] = hit
    counted(headersOf(setting.max, hit), exceeded)
  }
  app.decorate('countRequest', (setting: { max: number; group: string }, req: IncomingMessage, counted: Counted) => {
    const key = `${setting.group}:${app.clientAddress(req)}`
    if (shared === null) frontCounted(setting, req, local.hit(key, window), counted)
    else void countShared(key).then((hit) => frontCounted(setting, req, hit, counted))
  })

  // One hook per group and limit, shared by the routes that have them.
  const hooks = new Map<string, onRequestHookHandler>()
  const hookFor = (max: number, group: string) => {
    const key = `${group}:${max}`
    let hook = hooks.get(key)
    if (!hook) hooks.set(key, hook = limiter(max, group))
    return hook
  }

  // Each limited route gets its limiter as a route-level hook, so unlimited routes run no code for it;
  // the hook goes first, before others added later (the response cache's lookup counts against it).
  app.addHook('onRoute', (route) => {
    const url = route.url ?? ''
    route.config ??= {}
    let setting = route.config.rateLimit
    if (setting === undefined) {
      if (url === '/health' || url.startsWith('/api/docs')) setting = false
      else if (url.startsWith('/api/auth')) setting = { max: config.AUTH_RATE_LIMIT_MAX, group: 'auth' }
      else setting = { max: config.RATE_LIMIT_MAX, group: 'global' }
      route.config.rateLimit = setting
    }
    if (setting === false) return
    addRouteHook(route, 'onRequest', hookFor(setting.max, setting.group), 'first')
    addRouteHook(route, 'onSend', sendRateLimitHeaders, 'first')
  })
}, { name: 'rate-limit', dependencies: ['config', 'redis'] })
