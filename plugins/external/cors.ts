import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import { allowedOrigins } from '../../lib/cors-origins.ts'

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
