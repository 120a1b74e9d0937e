// The refresh token's cookie (scoped to /api/auth), the sign-in's state cookie, and the path a browser
// sign-in returns to (set beside the state cookie, read by /auth/callback).
export const REFRESH_COOKIE = 'refresh_token'
export const STATE_COOKIE = 'oauth_state'
export const RETURN_COOKIE = 'oauth_return'
// A marker beside the refresh cookie that pages may read (not httpOnly, on every path): its presence says
// that a refresh cookie was set and not cleared since, so a page renews through the cookie only then, and a
// first visit without a session asks nothing. It carries no secret (its value is always `1`), lives as long
// as the refresh cookie and is cleared with it; a stale marker costs one refused renewal, which clears it.
export const SESSION_MARKER_COOKIE = 'has_session'
export const SESSION_MARKER_VALUE = '1'
