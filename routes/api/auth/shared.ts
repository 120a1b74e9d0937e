import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Headers } from '../../../schemas/common.ts'
import type { UserRow } from '../../../db/auth.ts'
import { REFRESH_COOKIE } from '../../../lib/auth/cookies.ts'

// Not a route file: the pieces the sign-in and session routes share.
export const autoload = false

export const bearer = [{ bearerAuth: [] }]

// The headers of an answer carrying tokens: kept by no cache (RFC 6749 §5.1), and the refresh token's
// cookie, as sign-in and refresh set it (Secure in production).
export const tokenHeaders: Headers = {
  'cache-control': { type: 'string', description: 'Always `no-store` (every answer under /api/auth): no cache may keep the tokens (RFC 6749 §5.1)', example: 'no-store' },
  pragma: { type: 'string', description: 'Always `no-cache`, for HTTP/1.0 caches', example: 'no-cache' },
  'set-cookie': {
    type: 'string',
    description: 'The new refresh token as the httpOnly `refresh_token` cookie: Path=/api/auth, SameSite=Strict, Max-Age the refresh lifetime, Secure in production',
    example: 'refresh_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln; Max-Age=604800; Path=/api/auth; HttpOnly; SameSite=Strict'
  }
}

export function userBody (u: UserRow) {
  return { id: u.id, providerId: u.provider_id, username: u.username, discriminator: u.discriminator, avatar: u.avatar, role: u.role, createdAt: u.created_at.toISOString() }
}

export function refreshCookieOptions (app: FastifyInstance) {
  return { httpOnly: true, secure: app.config.isProduction, path: '/api/auth' } as const
}

export function setRefreshCookie (app: FastifyInstance, reply: FastifyReply, token: string): void {
  reply.setCookie(REFRESH_COOKIE, token, { ...refreshCookieOptions(app), sameSite: 'strict', maxAge: Math.floor(app.tokenLifetimes.refreshMs / 1000) })
}
