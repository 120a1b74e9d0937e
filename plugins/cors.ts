import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

const localOrigin = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

export function allowedOrigins(setting: string | undefined): (string | RegExp)[] {
  if (!setting || !setting.trim()) return [localOrigin]
  return setting.split(',').map((o) => o.trim()).filter(Boolean)
}

const METHODS = 'GET, HEAD, POST, DELETE, OPTIONS'
const EXPOSED = 'retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, etag'
const PREFLIGHT_MAX_AGE = '600'

/** A Vary value with `token` added to what is there. */
export function varyWith(current: unknown, token: string): string {
  return current ? `${String(current)}, ${token}` : token
}

/** Adds a token to the response's Vary header, keeping what is there. */
export function addVary(reply: FastifyReply, token: string): void {
  reply.header('vary', varyWith(reply.getHeader('vary'), token))
}

declare module 'fastify' {
  interface FastifyInstance {
    // The CORS headers of an answer to a request from this Origin (or none): Vary, and for an allowed
    // origin the Access-Control-* ones. The front door writes them for the answers it gives.
    corsHeaders(origin: string | undefined): Readonly<Record<string, string>>
  }
}

// Content-Length 0: some browsers wait for a body on a 204 without it.
const noContent = (reply: FastifyReply) => reply.code(204).header('content-length', '0').send()

/**
 * CORS for browsers on the allowed origins, with credentials (the refresh cookie). Every answer
 * varies by Origin; only a request from an allowed origin gets the Access-Control-* headers, and a
 * preflight (OPTIONS with Access-Control-Request-Method) is answered 204 here. Written out rather than
 * through @fastify/cors, whose per-request option merging cost 12–20 µs of CPU on every request,
 * Origin or not: as much as the rest of a cached answer.
 */
export default fp(async function corsPlugin(app: FastifyInstance) {
  const origins = allowedOrigins(app.config.CORS_ORIGINS)
  const allowed = (origin: string) => origins.some((o) => (typeof o === 'string' ? o === origin : o.test(origin)))

  const preflight = (request: FastifyRequest, reply: FastifyReply, origin: string | undefined) => {
    if (origin && allowed(origin)) {
      reply.header('access-control-allow-methods', METHODS)
      const requested = request.headers['access-control-request-headers']
      if (requested) reply.header('access-control-allow-headers', requested)
      reply.header('access-control-max-age', PREFLIGHT_MAX_AGE)
    }
    addVary(reply, 'Access-Control-Request-Headers')
    noContent(reply)
  }

  const plain = Object.freeze({ vary: 'Origin' })
  const corsHeaders = (origin: string | undefined): Readonly<Record<string, string>> => origin !== undefined && allowed(origin)
    ? { vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', 'access-control-expose-headers': EXPOSED }
    : plain
  app.decorate('corsHeaders', corsHeaders)

  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin
    const headers = corsHeaders(origin)
    if (headers === plain) reply.header('vary', 'Origin')
    else reply.headers(headers)
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      preflight(request, reply, origin)
      return
    }
    done()
  })

  // Preflights reach any path; the hook above answers them before this handler would.
  app.options('*', { schema: { hide: true }, config: { rateLimit: false } }, async (_request, reply) => {
    noContent(reply)
  })
}, { name: 'cors', dependencies: ['config'] })
