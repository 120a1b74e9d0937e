import fp from 'fastify-plugin'
import jwt, { type FastifyJWTOptions } from '@fastify/jwt'
import type { FastifyInstance } from 'fastify'
import { randomSecret } from '../../lib/auth/tokens.ts'
import { requiredDurationMs } from '../../lib/duration.ts'
import { EXPIRED, INVALID, MISSING } from '../../lib/auth/bearer-messages.ts'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    namespaces: 'access' | 'refresh'
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    // Lifetimes of the two token kinds, in milliseconds.
    tokenLifetimes: { accessMs: number; refreshMs: number }
  }
}

// The three 401 messages of the contract; whatever else fails verification is an invalid token.
const messages = {
  noAuthorizationInHeaderMessage: MISSING,
  badRequestErrorMessage: INVALID,
  authorizationTokenExpiredMessage: EXPIRED,
  authorizationTokenInvalid: INVALID,
  authorizationTokenUntrusted: INVALID,
  authorizationTokenUnsigned: INVALID
}

/**
 * Both token kinds through @fastify/jwt, each registration with its own namespace and secret: `access`
 * (app.jwt.access) and `refresh` (app.jwt.refresh). HS256 is pinned, the issuer
 * and the expiry are required and checked.
 */
export default fp(async function jwtPlugin (app: FastifyInstance) {
  const { config } = app
  let accessSecret = config.JWT_SECRET
  let refreshSecret = config.JWT_REFRESH_SECRET
  if (!accessSecret || !refreshSecret) {
    // Only outside production (loadConfig refuses it there): tokens then die with the process.
    app.log.warn('JWT_SECRET / JWT_REFRESH_SECRET not set: using random secrets for this process only; tokens will not survive a restart')
    accessSecret ??= randomSecret()
    refreshSecret ??= randomSecret()
  }
  const accessMs = requiredDurationMs('JWT_ACCESS_EXPIRES_IN', config.JWT_ACCESS_EXPIRES_IN)
  const refreshMs = requiredDurationMs('JWT_REFRESH_EXPIRES_IN', config.JWT_REFRESH_EXPIRES_IN)
  const verify = { algorithms: ['HS256'], allowedIss: config.JWT_ISSUER, requiredClaims: ['iss', 'exp'] }
  const kind = (namespace: string, secret: string, expiresIn: number, cache: number | boolean): FastifyJWTOptions => ({
    namespace,
    secret,
    // @fastify/jwt reads a numeric lifetime in seconds.
    sign: { algorithm: 'HS256', iss: config.JWT_ISSUER, expiresIn: Math.round(expiresIn / 1000) },
    verify: { ...verify, cache },
    messages
  } as FastifyJWTOptions)
  // Access tokens verified once are kept by the bearer check itself (plugins/app/auth.ts), keyed by the token.
  await app.register(jwt, kind('access', accessSecret, accessMs, false))
  // Refresh tokens are verified once each (they rotate): nothing to cache.
  await app.register(jwt, kind('refresh', refreshSecret, refreshMs, false))
  app.decorate('tokenLifetimes', { accessMs, refreshMs })
}, { name: 'jwt', dependencies: ['config'] })
