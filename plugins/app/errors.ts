import fp from 'fastify-plugin'
import type { FastifyError, FastifyInstance } from 'fastify'
import { errorBody, HttpError, isDatabaseUnavailable } from '../../lib/errors.ts'
import { bearerRefusalMessage } from '../external/jwt.ts'

// A bearer token refused by @fastify/jwt (its messages are the contract's) or by fast-jwt beneath it.
const isTokenError = (err: { code?: string }): boolean => typeof err.code === 'string' && /^(FST_JWT_|FAST_JWT_)/.test(err.code)

// Every non-2xx answer is {error, message}; a 5xx never carries internals.
export default fp(async function errors(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    if (err instanceof HttpError) {
      if (err.headers) reply.headers(err.headers)
      return reply.code(err.statusCode).send(errorBody(err.statusCode, err.message))
    }
    if (isTokenError(err)) return reply.code(401).send(errorBody(401, bearerRefusalMessage((err as FastifyError).code)))
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ code: (err as { code?: string }).code }, 'database unavailable')
      return reply.code(503).header('retry-after', '5').send(errorBody(503, 'The database is unavailable; try again shortly'))
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
    if (status >= 500) {
      request.log.error({ err }, 'request failed')
      return reply.code(status).send(errorBody(status, 'An unexpected error occurred'))
    }
    return reply.code(status).send(errorBody(status, err.message))
  })

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`))
  })
}, { name: 'errors' })
