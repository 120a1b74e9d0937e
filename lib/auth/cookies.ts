// The refresh token's cookie (scoped to /api/auth), and the sign-in's state cookie.
export const REFRESH_COOKIE = 'refresh_token'
export const STATE_COOKIE = 'oauth_state'
