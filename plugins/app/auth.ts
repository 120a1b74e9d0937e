import fp from 'fastify-plugin'
import { requiredDurationMs } from '../../lib/duration.ts'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { hashTokenId, isAccessClaims, isRefreshClaims, randomSecret, type AccessClaims, type RefreshClaims } from '../../lib/auth/tokens.ts'
import { MemorySigninGuard, RedisSigninGuard, type SigninGuard } from '../../lib/auth/signin-guard.ts'
import { RevocationList } from '../../lib/auth/revocations.ts'
import { ProfileCache } from '../../lib/auth/profile-cache.ts'
import { identityProviderSettings, type IdpSettings } from '../../lib/auth/idp-client.ts'
import type { AuthContext } from '../../lib/auth/types.ts'
import { LRUCache } from 'lru-cache'
import { sessionsRevokedSince, userWithGuilds, type UserRow, type UserWithGuilds } from '../../db/auth.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tokens: {
      /** A new access token for the user's session. */
      access(user: UserRow, sessionId: string): string
      /** A new refresh token with its id (`tokenId`, or a new random one; stored hashed) and expiry. */
      refresh(userId: string, tokenId?: string): { token: string; tokenHash: string; expiresAt: Date }
      /** The claims of a valid refresh token, or null for an expired, forged or malformed one. */
      verifyRefresh(token: string): RefreshClaims | null
    }
    revocations: RevocationList
    // Users with their guild lists, served from memory and dropped when anything writes the user.
    profiles: ProfileCache<UserWithGuilds>
    signinGuard: SigninGuard
    // SESSION_MAX_AGE and SESSION_RETENTION in milliseconds.
    // SESSION_MAX_AGE, SESSION_RETENTION, REFRESH_REUSE_GRACE and AUDIT_RETENTION in milliseconds.
    sessionPolicy: { maxAgeMs: number; retentionMs: number; reuseGraceMs: number; auditRetentionMs: number }
    identityProvider: IdpSettings
    // Bearer checks for protected routes (preParsing hooks): set request.auth or answer 401.
    authenticate: preParsingHookHandler
    // The same, accepting a revoked session's token (logout is idempotent).
    authenticateAllowRevoked: preParsingHookHandler
    // A route hook: 403 unless the caller's stored role is ADMIN.
    requireAdmin: (request: FastifyRequest) => Promise<void>
  }
}

/**
 * The auth decorators: token issue and the bearer checks over @fastify/jwt, the revocation list every
 * check consults, the profile cache behind /api/auth/me, the failed sign-in guard and the identity
 * provider's settings.
 */
export default fp(async function auth (app: FastifyInstance) {
  const { config } = app
  const { accessMs, refreshMs } = app.tokenLifetimes
  const sessionMaxAgeMs = requiredDurationMs('SESSION_MAX_AGE', config.SESSION_MAX_AGE)
  const retentionMs = requiredDurationMs('SESSION_RETENTION', config.SESSION_RETENTION)
  const reuseGraceMs = config.REFRESH_REUSE_GRACE.trim() === '0' ? 0 : requiredDurationMs('REFRESH_REUSE_GRACE', config.REFRESH_REUSE_GRACE)
  const auditRetentionMs = requiredDurationMs('AUDIT_RETENTION', config.AUDIT_RETENTION)

  const guardSettings = {
    maxFailures: config.SIGNIN_MAX_FAILURES,
    windowMs: 15 * 60_000,
    blockMs: config.SIGNIN_BLOCK_SECONDS * 1000,
    maxBlockMs: Math.max(config.SIGNIN_MAX_BLOCK_SECONDS, config.SIGNIN_BLOCK_SECONDS) * 1000,
    blockMemoryMs: 24 * 3_600_000
  }
  const memoryGuard = new MemorySigninGuard(guardSettings)
  const signinGuard: SigninGuard = app.redis ? new RedisSigninGuard(app.redis, guardSettings, memoryGuard) : memoryGuard

  // Revoked sessions: those of the last access-token lifetime from the database, then every revocation
  // and deletion the change bus announces (this instance's own included).
  const revocations = new RevocationList(accessMs)
  for (const id of await sessionsRevokedSince(app.db, new Date(Date.now() - accessMs - 60_000))) revocations.add(id)
  app.changes.on('session', (id) => revocations.add(id))
  const prune = setInterval(() => revocations.prune(), 60_000).unref()
  const profiles = new ProfileCache<UserWithGuilds>({ load: (id) => userWithGuilds(app.db, id), maxEntries: config.PROFILE_CACHE_SIZE, ttlMs: 60_000 })
  app.changes.on('user', (id) => profiles.invalidate(id))
  app.addHook('onClose', async () => { clearInterval(prune) })

  const devIdpClientSecret = config.devIdp ? randomSecret() : null
  if (config.devIdp) {
    app.log.warn('IDP_CLIENT_ID is not set: the DEVELOPMENT identity provider is active at /dev/idp (never use it in production)')
  }

  app.decorate('tokens', {
    access: (user: UserRow, sessionId: string) => app.jwt.access.sign({
      userId: user.id, providerId: user.provider_id, username: `${user.username}#${user.discriminator}`, role: user.role, sid: sessionId, jti: randomUUID()
    }),
    refresh: (userId: string, tokenId: string = randomUUID()) => {
      return { token: app.jwt.refresh.sign({ userId, tokenId, type: 'refresh' }), tokenHash: hashTokenId(tokenId), expiresAt: new Date(Date.now() + refreshMs) }
    },
    verifyRefresh: (token: string) => {
      try {
        const claims = app.signingKeys.verifyRefresh(token)
        return isRefreshClaims(claims) ? claims : null
      } catch {
        return null
      }
    }
  })
  app.decorate('sessionPolicy', { maxAgeMs: sessionMaxAgeMs, retentionMs, reuseGraceMs, auditRetentionMs })
  app.decorate('revocations', revocations)
  app.decorate('profiles', profiles)
  app.decorate('signinGuard', signinGuard)
  app.decorate('identityProvider', identityProviderSettings(config, devIdpClientSecret))
  app.decorateRequest('auth', null)

  // Verified access tokens, kept by the whole token (a hit is this very token, never one that shares a
  // part of it) until their expiry: the namespace's own verify cache keys each lookup by a SHA-256 of the
  // token, about 2 µs on every bearer request, where the token string is its own exact key. A miss is
  // verified by @fastify/jwt (signature, algorithm, issuer, expiry); a kept token past its `exp` is
  // verified again, which refuses it as expired. Revocation is checked on every request, hit or miss.
  // A miss picks the ring's key by the token's `kid` (plugins/external/jwt.ts).
  const access = app.jwt.access
  const verifyToken = app.signingKeys.verifyAccess
  const verified = new LRUCache<string, VerifiedAccess>({ max: 10_000 })
  const verifyAccess = (token: string): VerifiedAccess | HttpError => {
    const claims = verifyToken(token)
    if (!isAccessClaims(claims)) return new HttpError(401, 'Invalid token')
    const entry = { auth: authContext(claims), expiresAtMs: claims.exp * 1000 }
    verified.set(token, entry)
    return entry
  }
  const bearerCheck = (allowRevoked: boolean): preParsingHookHandler => (request, _reply, payload, done) => {
    let entry: VerifiedAccess | HttpError | undefined
    try {
      const token = access.lookupToken(request)
      entry = verified.get(token)
      // Valid through its `exp` second, as @fastify/jwt's verifier counts it.
      if (entry === undefined || Date.now() > entry.expiresAtMs) entry = verifyAccess(token)
    } catch (err) {
      done(err as Error)
      return
    }
    if (entry instanceof HttpError || (!allowRevoked && revocations.has(entry.auth.sessionId))) {
      done(entry instanceof HttpError ? entry : new HttpError(401, 'Invalid token'))
      return
    }
    request.auth = entry.auth
    done(null, payload)
  }
  // The role as stored now (the profile cache is dropped on every instance when the user changes), not
  // the token's claim: a demoted admin loses the admin API at the next request.
  app.decorate('requireAdmin', async function requireAdmin (request: FastifyRequest) {
    const found = await profiles.get(request.auth!.userId)
    if (found?.user.role !== 'ADMIN') throw new HttpError(403, 'Insufficient permissions')
  })
  app.decorate('authenticate', bearerCheck(false))
  app.decorate('authenticateAllowRevoked', bearerCheck(true))
}, { name: 'auth', dependencies: ['config', 'db', 'redis', 'jwt', 'changes'] })

// Shared by every request of the token: frozen, so that no handler can change what the next one sees.
const authContext = (claims: AccessClaims): AuthContext => Object.freeze({ userId: claims.userId, providerId: claims.providerId, username: claims.username, role: claims.role, sessionId: claims.sid })

interface VerifiedAccess { auth: AuthContext; expiresAtMs: number }
