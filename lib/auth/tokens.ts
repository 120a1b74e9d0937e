import { createHash, createHmac, randomBytes } from 'node:crypto'
import type { Role } from './types.ts'

/** An access token's claims: the seed's, plus the issuer, the session (`sid`) and a unique id (`jti`). */
export interface AccessClaims {
  userId: string
  providerId: string
  username: string
  role: Role
  sid: string
  jti: string
  iss: string
  iat: number
  exp: number
}

/** A refresh token's claims: the seed's, plus the issuer. */
export interface RefreshClaims {
  userId: string
  tokenId: string
  type: 'refresh'
  iss: string
  iat: number
  exp: number
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0

/** A verified payload that has an access token's shape (a refresh token or another JWT does not). */
export function isAccessClaims (claims: Record<string, unknown>): claims is Record<string, unknown> & AccessClaims {
  return claims.type === undefined && isString(claims.sid) && isString(claims.userId) && (claims.role === 'USER' || claims.role === 'ADMIN')
}

/** A verified payload that has a refresh token's shape. */
export function isRefreshClaims (claims: Record<string, unknown>): claims is Record<string, unknown> & RefreshClaims {
  return claims.type === 'refresh' && isString(claims.tokenId) && isString(claims.userId)
}

// Refresh token ids are stored hashed: a leaked table cannot be replayed.
export function hashTokenId (tokenId: string): string {
  return createHash('sha256').update(tokenId).digest('hex')
}

/**
 * The id of the refresh token that succeeds `tokenId` at its rotation: the same for every presentation of
 * one token, so that replays within the grace window are handed one successor rather than a chain each.
 * Knowing it is worth nothing without the server's signature on a token that carries it.
 */
export function successorTokenId (tokenId: string): string {
  return createHmac('sha256', tokenId).update('refresh-token-successor').digest('base64url')
}

export function randomSecret (): string {
  return randomBytes(48).toString('base64url')
}
