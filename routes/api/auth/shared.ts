import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Headers } from '../../../schemas/common.ts'
import type { UserRow } from '../../../db/auth.ts'
import type { SignedIn } from '../../../plugins/app/signin.ts'
import { REFRESH_COOKIE, SESSION_MARKER_COOKIE, SESSION_MARKER_VALUE, STATE_COOKIE } from '../../../lib/auth/cookies.ts'
import { HttpError } from '../../../lib/errors.ts'
import { grantsRequiredScopes, exchangeFailure, fetchIdentity, SigninRefused } from '../../../lib/auth/idp-client.ts'

// Not a route file: the pieces the sign-in and session routes share.
export const autoload = false

export const bearer = [{ bearerAuth: [] }]

// How the refresh cookie's marker is described where it is set or cleared (an answer has one set-cookie header in the document).
export const MARKER_DESCRIPTION = 'Beside it, the `has_session=1` marker (Path=/, SameSite=Strict, the same Max-Age, Secure in production, not httpOnly: pages read it to know a session may exist; it holds no secret)'

// The headers of an answer carrying tokens: kept by no cache (RFC 6749 §5.1), and the refresh token's
// cookie, as sign-in and refresh set it (Secure in production).
export const tokenHeaders: Headers = {
  'cache-control': { type: 'string', description: 'Always `no-store` (every answer under /api/auth): no cache may keep the tokens (RFC 6749 §5.1)', example: 'no-store' },
  pragma: { type: 'string', description: 'Always `no-cache`, for HTTP/1.0 caches', example: 'no-cache' },
  'set-cookie': {
    type: 'string',
    description: `The new refresh token as the httpOnly \`refresh_token\` cookie: Path=/api/auth, SameSite=Strict, Max-Age the refresh lifetime, Secure in production. ${MARKER_DESCRIPTION}`,
    example: 'refresh_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln; Max-Age=604800; Path=/api/auth; HttpOnly; SameSite=Strict'
  }
}

export function userBody (u: UserRow) {
  return { id: u.id, providerId: u.provider_id, username: u.username, discriminator: u.discriminator, avatar: u.avatar, role: u.role, createdAt: u.created_at.toISOString() }
}

export function refreshCookieOptions (app: FastifyInstance) {
  return { httpOnly: true, secure: app.config.isProduction, path: '/api/auth' } as const
}

// The marker follows the refresh cookie's rules (SameSite=Strict, Secure in production, its lifetime) but for
// its path: a page reads it, and a cookie of /api/auth is not visible to the pages' scripts.
export function markerCookieOptions (app: FastifyInstance) {
  return { httpOnly: false, secure: app.config.isProduction, path: '/', sameSite: 'strict' } as const
}

/** The refresh cookie, and its marker for the pages (lib/auth/cookies.ts). */
export function setRefreshCookie (app: FastifyInstance, reply: FastifyReply, token: string): void {
  const maxAge = Math.floor(app.tokenLifetimes.refreshMs / 1000)
  reply.setCookie(REFRESH_COOKIE, token, { ...refreshCookieOptions(app), sameSite: 'strict', maxAge })
  reply.setCookie(SESSION_MARKER_COOKIE, SESSION_MARKER_VALUE, { ...markerCookieOptions(app), maxAge })
}

/** Clears the refresh cookie and its marker. */
export function clearRefreshCookie (app: FastifyInstance, reply: FastifyReply): void {
  reply.clearCookie(REFRESH_COOKIE, refreshCookieOptions(app))
  clearSessionMarker(app, reply)
}

/** Clears the marker alone: the session it announced is over. */
export function clearSessionMarker (app: FastifyInstance, reply: FastifyReply): void {
  reply.clearCookie(SESSION_MARKER_COOKIE, markerCookieOptions(app))
}

// The code exchange through @fastify/oauth2 (decorated in the route's scope), its failures mapped onto the contract.
async function exchangeCode (request: FastifyRequest, reply: FastifyReply): Promise<string> {
  let grant
  try {
    grant = (await request.server.identityOAuth2.getAccessTokenFromAuthorizationCodeFlow(request, reply)).token
  } catch (err) {
    if (err instanceof Error && err.message === 'Invalid state') throw new SigninRefused(401, 'Invalid state')
    const failure = exchangeFailure(err)
    if (failure instanceof SigninRefused) throw failure
    request.log.warn({ err: (err as Error).message }, 'identity provider code exchange failed')
    throw failure
  }
  if (typeof grant.access_token !== 'string' || grant.access_token === '') throw new HttpError(502, 'Identity provider unavailable')
  if (!grantsRequiredScopes((grant as { scope?: unknown }).scope)) {
    throw new SigninRefused(403, 'The identity provider did not grant the identify and guilds scopes')
  }
  return grant.access_token
}

/**
 * The sign-in of both GET /api/auth/identity and /auth/callback: the request's code traded through the
 * sign-in guard (its refusals count against the client's address), a new session, the refresh cookie.
 * `requireState`: the sign-in must have started here (a browser's), so a missing state or state cookie
 * is refused like a wrong one.
 */
export async function signInWithCode (request: FastifyRequest, reply: FastifyReply, options: { requireState?: boolean } = {}): Promise<SignedIn> {
  const app = request.server
  const signedIn = await app.signin.signIn({ ip: request.ip, userAgent: request.headers['user-agent'], log: request.log }, async () => {
    const { state } = request.query as { state?: string }
    if (options.requireState && (!state || request.cookies[STATE_COOKIE] === undefined)) throw new SigninRefused(401, 'Invalid state')
    return fetchIdentity(app.identityProvider, await exchangeCode(request, reply))
  })
  setRefreshCookie(app, reply, signedIn.refreshToken)
  return signedIn
}
