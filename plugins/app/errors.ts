import fp from 'fastify-plugin'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyServerOptions } from 'fastify'
import type { Config } from '../../lib/config.ts'
import { errorBody, HttpError, isDatabaseUnavailable, isTransactionConflict, reasonPhrase } from '../../lib/errors.ts'
import { clip } from '../../lib/logger.ts'
import { bearerRefusalMessage } from '../../lib/auth/bearer-messages.ts'
import { allowedOrigins, isAllowedOrigin } from '../../lib/cors-origins.ts'

// A bearer token refused by @fastify/jwt (its messages are the contract's) or by fast-jwt beneath it.
const isTokenError = (err: { code?: string }): boolean => typeof err.code === 'string' && /^(FST_JWT_|FAST_JWT_)/.test(err.code)

// Every non-2xx answer is {error, message}; a 5xx never carries internals.
export default fp(async function errors (app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    // The body is JSON whatever the route had set for its own answer (a download that fails before its
    // first byte had set its file's type).
    reply.type('application/json; charset=utf-8')
    if (err instanceof HttpError) {
      if (err.headers) reply.headers(err.headers)
      return reply.code(err.statusCode).send(errorBody(err.statusCode, err.message))
    }
    if (isTokenError(err)) return reply.code(401).send(errorBody(401, bearerRefusalMessage((err as FastifyError).code)))
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ code: (err as { code?: string }).code }, 'database unavailable')
      return reply.code(503).header('retry-after', '5').send(errorBody(503, 'The database is unavailable; try again shortly'))
    }
    if (isTransactionConflict(err)) {
      // Only once inTransaction's retries are spent: the request met the same rival every time.
      request.log.warn({ code: (err as { code?: string }).code }, 'transaction conflict')
      return reply.code(503).header('retry-after', '1').send(errorBody(503, 'The request conflicted with a concurrent one; try again'))
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
    if (status >= 500) {
      request.log.error({ err }, 'request failed')
      return reply.code(status).send(errorBody(status, 'An unexpected error occurred'))
    }
    return reply.code(status).send(errorBody(status, err.message))
  })

  // Unmatched URLs are rate limited like every route: a scan of made-up paths draws on the same budget
  // (the app registers plugins/external, the limiter included, before this; a server without a limiter,
  // as the bench's per-piece servers, answers them unlimited).
  app.setNotFoundHandler(app.hasDecorator('rateLimit') ? { preHandler: app.rateLimit() } : {}, (request, reply) => {
    reply.code(404).send(errorBody(404, `Route ${request.method} ${clip(request.url.split('?')[0]!, 200)} not found`))
  })
}, { name: 'errors' })

/**
 * The router's own errors, raised before any hook runs: a malformed percent-escape (400) and a path
 * parameter longer than the router's limit (414). Answered as {error, message}, with the CORS headers
 * @fastify/cors would have set, since its hook never runs for them.
 */
export function frameworkErrorHandler (config: Config): NonNullable<FastifyServerOptions['frameworkErrors']> {
  const origins = allowedOrigins(config.CORS_ORIGINS)
  return (err, request, res) => {
    // The option's reply type is generic over every route's schema; this one sends the error shape only.
    const reply = res as unknown as FastifyReply
    const status = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400
    const message = status === 414 ? 'A path parameter is longer than the server accepts' : 'The URL has a malformed percent-encoding'
    const origin = request.headers.origin
    reply.header('vary', 'Origin')
    if (typeof origin === 'string' && isAllowedOrigin(origin, origins)) {
      reply.header('access-control-allow-origin', origin)
      reply.header('access-control-allow-credentials', 'true')
    }
    reply.code(status).send(errorBody(status, message))
  }
}

const clientErrors: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'The request headers were not received in time']
}

/**
 * Errors of the HTTP parser, before there is a request to route (malformed request line or headers,
 * headers too large, a request not received within REQUEST_TIMEOUT): {error, message} written on the
 * socket, which is then closed.
 */
export function clientErrorHandler (err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, message] = clientErrors[err.code ?? ''] ?? [400, 'The request is not valid HTTP']
  const body = JSON.stringify(errorBody(status, message))
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reasonPhrase(status)}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  }
  socket.destroy()
}
