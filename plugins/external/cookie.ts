import fp from 'fastify-plugin'
import cookie from '@fastify/cookie'
import { createHmac } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { randomSecret } from '../../lib/auth/tokens.ts'

// Registered by the sign-in routes' scope only: its parse and write hooks run on every request of the
// scope that registers it, and the bearer routes (/api/auth/me first) have no use for cookies.
export const autoload = false

/**
 * Cookies for the sign-in state, the PKCE verifier and the refresh token. Signed cookies use a key
 * derived from the refresh-token secret (JWT_REFRESH_SECRET, or this process's random one).
 */
export default fp(async function cookiePlugin (app: FastifyInstance) {
  // Without JWT_REFRESH_SECRET (development only) the key is this process's own, like the token secrets.
  const key = app.config.JWT_REFRESH_SECRET ?? randomSecret()
  await app.register(cookie, { secret: createHmac('sha256', key).update('cookie-signing').digest('base64url') })
}, { name: 'cookie', dependencies: ['config'] })
