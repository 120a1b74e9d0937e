import fp from 'fastify-plugin'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { HttpError } from '../../lib/errors.ts'
import { SigninRefused, type IdpGuild, type IdpUser } from '../../lib/auth/idp-client.ts'
import { hashTokenId, successorTokenId } from '../../lib/auth/tokens.ts'
import { createSession, isUuid, revokeAllSessions, revokeSession, rotateRefreshToken, saveSignIn, sessionOwner, type RevokedBy, type UserRow } from '../../db/auth.ts'

export interface SignedIn { accessToken: string; refreshToken: string; user: UserRow }
export type Refreshed = { kind: 'ok'; accessToken: string; refreshToken: string } | { kind: 'reused' } | { kind: 'invalid' }

export interface SigninService {
  /**
   * A sign-in from `ip`: refused with 429 while the address is blocked, then `identify` (the code
   * exchange and the provider's answers) and a new session. Only the client's own failures (a refused
   * code, state or scope: SigninRefused) count against the address.
   */
  signIn(who: { ip: string; userAgent: string | undefined; log: FastifyBaseLogger }, identify: () => Promise<{ user: IdpUser; guilds: IdpGuild[] }>): Promise<SignedIn>
  /** Rotates a refresh token; a token already rotated revokes its whole session (it was copied). */
  refresh(token: string | undefined, log: FastifyBaseLogger): Promise<Refreshed>
  /** Revokes one session of the user's; false when the user has no such session. */
  revoke(userId: string, sessionId: string, reason: string, by?: { by: RevokedBy; actorId?: string }): Promise<boolean>
  /** Ends every session of the user, or every one but `except`; at once on every instance. */
  signOutAll(userId: string, options?: { except?: string; actorId?: string }): Promise<number>
}

declare module 'fastify' {
  interface FastifyInstance {
    signin: SigninService
  }
}

/** What the sign-in and session routes do, behind them: the routes keep HTTP (cookies, status codes). */
export default fp(async function signin (app: FastifyInstance) {
  const { tokens, revocations, signinGuard } = app
  // signin_attempts_total{outcome}: success, refused (the client's fault), failed (provider or database), blocked.
  const signins = app.appMetrics.signins

  const service: SigninService = {
    async signIn ({ ip, userAgent, log }, identify) {
      const wait = await signinGuard.begin(ip)
      if (wait) {
        signins.inc({ outcome: 'blocked' })
        log.warn({ ip, blockSeconds: Math.ceil(wait / 1000) }, 'sign-in refused: too many failed attempts from this address')
        throw new HttpError(429, 'Rate limit exceeded', { 'retry-after': String(Math.ceil(wait / 1000)) })
      }
      let user: UserRow
      let refresh: ReturnType<typeof tokens.refresh>
      let sid: string
      try {
        const identity = await identify()
        user = await saveSignIn(app.db, identity.user, identity.guilds)
        app.profiles.invalidate(user.id)
        refresh = tokens.refresh(user.id)
        sid = await createSession(app.db, {
          userId: user.id,
          tokenHash: refresh.tokenHash,
          expiresAt: refresh.expiresAt,
          userAgent: userAgent?.slice(0, 512) ?? null,
          ip
        }, app.sessionPolicy.maxAgeMs)
      } catch (err) {
        signins.inc({ outcome: err instanceof SigninRefused ? 'refused' : 'failed' })
        if (!(err instanceof SigninRefused)) await signinGuard.release(ip)
        throw err
      }
      signins.inc({ outcome: 'success' })
      await signinGuard.release(ip)
      return { accessToken: tokens.access(user, sid), refreshToken: refresh.token, user }
    },

    async refresh (token, log) {
      const claims = token ? tokens.verifyRefresh(token) : null
      if (claims === null) return { kind: 'invalid' }
      const next = tokens.refresh(claims.userId, successorTokenId(claims.tokenId))
      const result = await rotateRefreshToken(app.db, hashTokenId(claims.tokenId), { tokenHash: next.tokenHash, expiresAt: next.expiresAt }, app.sessionPolicy.maxAgeMs, app.sessionPolicy.reuseGraceMs)
      if (result.kind === 'reused') {
        await revokeSession(app.db, result.sessionId, 'refresh token reuse', { by: 'reuse' })
        revocations.add(result.sessionId)
        log.warn({ sessionId: result.sessionId }, 'refresh token reused: session revoked')
        return { kind: 'reused' }
      }
      if (result.kind !== 'ok') return { kind: 'invalid' }
      if (result.replay) log.info({ sessionId: result.sessionId }, 'refresh token presented again within the grace window: handed its successor')
      return { kind: 'ok', accessToken: tokens.access(result.user, result.sessionId), refreshToken: next.token }
    },

    async revoke (userId, sessionId, reason, by = { by: 'self' }) {
      const owner = isUuid(sessionId) ? await sessionOwner(app.db, sessionId) : undefined
      if (!owner || owner.user_id !== userId) return false
      if (await revokeSession(app.db, sessionId, reason, { ...by, userId })) revocations.add(sessionId)
      return true
    },

    async signOutAll (userId, options = {}) {
      const ids = await revokeAllSessions(app.db, userId, options)
      for (const id of ids) revocations.add(id)
      return ids.length
    }
  }
  app.decorate('signin', service)
}, { name: 'signin', dependencies: ['config', 'db', 'auth', 'metrics'] })
