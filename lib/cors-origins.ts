const localOrigin = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

/** CORS_ORIGINS (comma-separated) replaces the default: any port of http://localhost and http://127.0.0.1. */
export function allowedOrigins (setting: string | undefined): (string | RegExp)[] {
  if (!setting || !setting.trim()) return [localOrigin]
  return setting.split(',').map((o) => o.trim()).filter(Boolean)
}

/** The same test @fastify/cors applies to an Origin header: an exact string or a pattern. */
export function isAllowedOrigin (origin: string, origins: (string | RegExp)[]): boolean {
  return origins.some((o) => (typeof o === 'string' ? o === origin : o.test(origin)))
}
