import type { FastifyInstance } from 'fastify'

// Sign-in and token routes draw on their own, stricter budget (AUTH_RATE_LIMIT_MAX), shared by the group;
// the global limiter sees the request already counted and stands aside.
export default async function authPolicy (app: FastifyInstance): Promise<void> {
  app.addHook('preParsing', app.authRateLimit)
}
