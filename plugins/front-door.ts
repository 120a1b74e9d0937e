import fp from 'fastify-plugin'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { requestChildLogger } from '../lib/logger.ts'
import type { NextHandler } from '../lib/front-door.ts'
import type { RateLimitHeaders, RateLimitSetting } from './rate-limit.ts'

export type FrontHeaders = Record<string, string | number | string[] | undefined>

/** Writes an answer's status, headers and body; `headers` already holds the CORS and rate-limit ones. */
export type FrontWriter<T> = (req: IncomingMessage, res: ServerResponse, headers: FrontHeaders, value: T) => void

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Answers a raw request at the front door as the framework path would: counted against the route's
     * rate limit (a request over it goes on to Fastify, which answers the 429 without counting it again),
     * with the CORS headers for its Origin and, at info level, Fastify's two request log lines; then
     * `write` gives the answer itself.
     */
    answerAtFrontDoor<T>(req: IncomingMessage, res: ServerResponse, next: NextHandler, limit: RateLimitSetting, write: FrontWriter<T>, value: T): void
  }
}

// Fastify's request.hostname for a Host header: without the port, an IPv6 literal kept in brackets.
const hostnameOf = (host: string) => (host[0] === '[' ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0])

/**
 * What every answer given before the router shares with the framework path. The handlers themselves
 * (cached placemark reads, /api/auth/me) decide whether they can answer and what; everything they
 * cannot answer goes on to Fastify.
 */
export default fp(async function frontDoorPlugin(app: FastifyInstance) {
  const answer = <T>(req: IncomingMessage, res: ServerResponse, limit: RateLimitHeaders | null, write: FrontWriter<T>, value: T) => {
    const headers: FrontHeaders = { ...app.corsHeaders(req.headers.origin) }
    if (limit !== null) Object.assign(headers, limit)
    if ((app.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') === true) {
      // The same two lines Fastify logs for a request, under the same kind of request id.
      const log = requestChildLogger(app.log, { reqId: app.nextRequestId() }, {})
      log.info({ req: { method: req.method, url: req.url, hostname: hostnameOf(req.headers.host ?? ''), ip: app.clientAddress(req) } }, 'incoming request')
      const started = performance.now()
      res.once('finish', () => log.info({ res: { statusCode: res.statusCode }, responseTime: performance.now() - started }, 'request completed'))
    }
    write(req, res, headers, value)
  }

  app.decorate('answerAtFrontDoor', <T>(req: IncomingMessage, res: ServerResponse, next: NextHandler, limit: RateLimitSetting, write: FrontWriter<T>, value: T) => {
    if (limit === false) {
      answer(req, res, null, write, value)
      return
    }
    app.countRequest(limit, req, (headers, exceeded) => {
      if (exceeded) next(req, res)
      else answer(req, res, headers, write, value)
    })
  })

  // While the server closes, every request goes on to Fastify, which refuses it.
  app.addHook('preClose', (done) => {
    app.frontDoor.close()
    done()
  })
}, { name: 'front-door', dependencies: ['config', 'cors', 'rate-limit'] })
