// The three 401 messages of a refused bearer token (the seed's contract).
export const MISSING = 'Missing authorization header'
export const EXPIRED = 'Token expired'
export const INVALID = 'Invalid token'

/**
 * The 401 message of a refused bearer token, by the error's code (@fastify/jwt's, or fast-jwt's from
 * app.jwt.access.verify): @fastify/jwt appends fast-jwt's own
 * reason to some messages ("Invalid token The token is malformed."), so the code decides, not the text.
 */
export function bearerRefusalMessage (code: string): string {
  if (code === 'FST_JWT_NO_AUTHORIZATION_IN_HEADER') return MISSING
  return code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED' || code === 'FAST_JWT_EXPIRED' ? EXPIRED : INVALID
}
