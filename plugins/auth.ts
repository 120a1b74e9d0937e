import fp from 'fastify-plugin'
import { createHmac } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { HttpError } from '../lib/errors.ts'
import { TokenService, randomSecret, type AccessClaims } from '../lib/auth/tokens.ts'
import { MemorySigninGuard, RedisSigninGuard, type SigninGuard } from '../lib/auth/signin-guard.ts'
import { RevocationList } from '../lib/auth/revocations.ts'
import { ProfileCache } from '../lib/auth/profile-cache.ts'
import { userWithGuilds, type UserWithGuilds } from '../db/auth.ts'
import type { IdpSettings } from '../lib/auth/idp-client.ts'
import type { AuthContext } from '../lib/auth/types.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tokens: TokenService
    revocations: RevocationList
    // Users with their guild lists, served from memory and dropped when anything writes the user.
    profiles: ProfileCache<UserWithGuilds>
    signinGuard: SigninGuard
    // Resolved per call: the development provider's URLs need the port the server actually listens on.
    idpSettings(): IdpSettings & { authorizeUrl: string }
    devIdpClientSecret: string | null
    // The bearer check of an Authorization header: the caller, or the 401 message for a missing, expired,
    // invalid or revoked token. The one check behind both ways in (the hook below and the front door).
    bearerAuth(authorization: string | undefined): AuthContext | string
    // Bearer check for protected routes: sets request.auth or answers 401.
    // A callback-style onRequest hook: the check is synchronous, and a promise per request costs more than it.
    authenticate(request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void
  }
}

export const REFRESH_COOKIE = 'refresh_token'
export const STATE_COOKIE = 'oauth_state'

/** The key signing the sign-in state cookie, derived from the refresh-token secret. */
export function cookieSecret(tokens: TokenService): string {
  return createHmac('sha256', tokens.settings.refreshSecret).update('cookie-signing').digest('base64url')
}

/**
 * The verified claims of a request's bearer token, or the 401 message for a missing, expired or invalid
 * one. It does not consult revocations: the bearer check adds that, and logout accepts a revoked
 * session's token.
 */
export function readBearer(tokens: TokenService, header: string | undefined): AccessClaims | string {
  if (!header || !/^Bearer\s+\S/i.test(header)) return 'Missing authorization header'
  const claims = tokens.verifyAccess(header.replace(/^Bearer\s+/i, '').trim())
  if (claims === 'expired') return 'Token expired'
  if (claims === 'invalid') return 'Invalid token'
  return claims
}

/** readBearer for a route: the claims, or a thrown 401. */
export function bearerClaims(tokens: TokenService, header: string | undefined): AccessClaims {
  const claims = readBearer(tokens, header)
  if (typeof claims === 'string') throw new HttpError(401, claims)
  return claims
}

export default fp(async function auth(app: FastifyInstance) {
  const { config } = app
  let accessSecret = config.JWT_SECRET
  let refreshSecret = config.JWT_REFRESH_SECRET
  if (!accessSecret || !refreshSecret) {
    // Only outside production (loadConfig refuses it there): tokens then die with the process.
    app.log.warn('JWT_SECRET / JWT_REFRESH_SECRET not set: using random secrets for this process only; tokens will not survive a restart')
    accessSecret ??= randomSecret()
    refreshSecret ??= randomSecret()
  }
  const tokens = new TokenService({
    accessSecret, refreshSecret, issuer: config.JWT_ISSUER,
    accessExpiresIn: config.JWT_ACCESS_EXPIRES_IN, refreshExpiresIn: config.JWT_REFRESH_EXPIRES_IN
  })

  const guardSettings = { maxFailures: config.SIGNIN_MAX_FAILURES, windowMs: 15 * 60_000, blockMs: config.SIGNIN_BLOCK_SECONDS * 1000, maxBlockMs: 24 * 3_600_000 }
  const memoryGuard = new MemorySigninGuard(guardSettings)
  const signinGuard: SigninGuard = app.redis ? new RedisSigninGuard(app.redis, guardSettings, memoryGuard) : memoryGuard

  const revocations = new RevocationList(app.db, tokens.accessTtlMs, config.REVOCATION_POLL_MS, app.redis,
    (err) => app.log.debug({ err }, 'revocation sync failed'))
  await revocations.start()
  const profiles = new ProfileCache<UserWithGuilds>({
    db: app.db, load: (id) => userWithGuilds(app.db, id), maxEntries: config.PROFILE_CACHE_SIZE, ttlMs: 60_000,
    pollMs: config.REVOCATION_POLL_MS, redis: app.redis, onError: (err) => app.log.debug({ err }, 'profile change poll failed')
  })
  await profiles.start()
  app.addHook('onClose', async () => { await Promise.all([revocations.stop(), profiles.stop()]) })

  const devIdpClientSecret = config.devIdp ? randomSecret() : null
  if (config.devIdp) {
    app.log.warn('IDP_CLIENT_ID is not set: the DEVELOPMENT identity provider is active at /dev/idp (never use it in production)')
  }
  const idpSettings = () => {
    if (!config.devIdp) {
      return {
        clientId: config.IDP_CLIENT_ID!, clientSecret: config.IDP_CLIENT_SECRET ?? '', redirectUri: config.IDP_REDIRECT_URI ?? `${config.PUBLIC_URL}/auth/callback`,
        authorizeUrl: config.IDP_AUTHORIZE_URL ?? '', tokenUrl: config.IDP_TOKEN_URL ?? '', userUrl: config.IDP_USER_URL ?? '', guildsUrl: config.IDP_GUILDS_URL ?? '',
        timeoutMs: config.IDP_TIMEOUT_MS
      }
    }
    const address = app.server.address() as AddressInfo | null
    const self = `http://127.0.0.1:${address?.port ?? config.PORT}/dev/idp`
    return {
      clientId: 'dev-client', clientSecret: devIdpClientSecret!, redirectUri: config.IDP_REDIRECT_URI ?? `${config.PUBLIC_URL}/auth/callback`,
      authorizeUrl: config.IDP_AUTHORIZE_URL ?? `${config.PUBLIC_URL}/dev/idp/authorize`,
      tokenUrl: config.IDP_TOKEN_URL ?? `${self}/token`, userUrl: config.IDP_USER_URL ?? `${self}/users/@me`,
      guildsUrl: config.IDP_GUILDS_URL ?? `${self}/users/@me/guilds`, timeoutMs: config.IDP_TIMEOUT_MS
    }
  }

  app.decorate('tokens', tokens)
  app.decorate('revocations', revocations)
  app.decorate('profiles', profiles)
  app.decorate('signinGuard', signinGuard)
  app.decorate('idpSettings', idpSettings)
  app.decorate('devIdpClientSecret', devIdpClientSecret)
  app.decorateRequest('auth', null)
  const bearerAuth = (authorization: string | undefined): AuthContext | string => {
    const claims = readBearer(tokens, authorization)
    if (typeof claims === 'string') return claims
    if (revocations.has(claims.sid)) return 'Invalid token'
    return { userId: claims.userId, providerId: claims.providerId, username: claims.username, role: claims.role, sessionId: claims.sid }
  }
  app.decorate('bearerAuth', bearerAuth)
  app.decorate('authenticate', function authenticate(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    const auth = bearerAuth(request.headers.authorization)
    if (typeof auth === 'string') {
      done(new HttpError(401, auth))
      return
    }
    request.auth = auth
    done()
  })
}, { name: 'auth', dependencies: ['config', 'db', 'redis'] })
