import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'

const localOrigin = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

/** CORS_ORIGINS (comma-separated) replaces the default: any port of http://localhost and http://127.0.0.1. */
export function allowedOrigins (setting: string | undefined): (string | RegExp)[] {
  if (!setting || !setting.trim()) return [localOrigin]
  return setting.split(',').map((o) => o.trim()).filter(Boolean)
}

/** The same test @fastify/cors applies to an Origin header: an exact string or a pattern. */
export function isAllowedOrigin (origin: string, origins: (string | RegExp)[]): boolean {
  return origins.some((o) => (typeof o === 'string' ? o === origin : o.test(origin)))
}

/**
 * Browsers on the allowed origins may call the API with credentials (the refresh cookie) and read the
 * rate-limit headers and the ETag. Every answer varies by Origin; preflights are answered 204.
 */
export default fp(async function corsPlugin (app: FastifyInstance) {
  await app.register(cors, {
    origin: allowedOrigins(app.config.CORS_ORIGINS),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    // One string: a list would be joined again on every answer.
    exposedHeaders: 'retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, etag',
    maxAge: 600,
    // An OPTIONS without the preflight headers is answered 204 too, never a text/plain 400.
    strictPreflight: false,
    // Preflights are answered after every onRequest hook, so plugins added later (security headers) see them.
    hook: 'preParsing'
  })
}, { name: 'cors', dependencies: ['config'] })
