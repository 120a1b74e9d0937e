import type { FastifyInstance } from 'fastify'

// Sign-in and token routes draw on their own, stricter budget (AUTH_RATE_LIMIT_MAX), shared by the group;
// the global limiter sees the request already counted and stands aside.
// Every answer of the group carries tokens, a refresh cookie or the user's own data: no cache, shared or
// private, may keep it (RFC 6749 §5.1: Cache-Control no-store, and Pragma no-cache for HTTP/1.0 caches),
// whether it succeeds or fails.
export default async function authPolicy (app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    done()
  })
  app.addHook('preParsing', app.authRateLimit)
}
