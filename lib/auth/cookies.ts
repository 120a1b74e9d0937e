// The refresh token's cookie (scoped to /api/auth), the sign-in's state cookie, and the path a browser
// sign-in returns to (set beside the state cookie, read by /auth/callback).
export const REFRESH_COOKIE = 'refresh_token'
export const STATE_COOKIE = 'oauth_state'
export const RETURN_COOKIE = 'oauth_return'
