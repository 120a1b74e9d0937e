import type { FastifyInstance } from 'fastify'

type Security = Record<string, unknown>[] | undefined

/**
 * Authentication follows the OpenAPI document: a route whose schema declares the bearer scheme gets the
 * bearer check as its own preParsing hook (after the rate limiter, before any body is read), so the docs and
 * the enforcement cannot disagree. A route that must accept a revoked session's token (logout) says so in its config.
 */
export default async function bearerPolicy (app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route) => {
    const security = (route.schema as { security?: Security } | undefined)?.security
    if (!security?.some((scheme) => 'bearerAuth' in scheme)) return
    const check = route.config?.allowRevokedSession ? app.authenticateAllowRevoked : app.authenticate
    const own = route.preParsing
    route.preParsing = own === undefined ? [check] : Array.isArray(own) ? [...own, check] : [own, check]
    // Before validation: a caller who may not use the route learns nothing from its parameters' rules.
    if (route.config?.role === 'ADMIN') route.preValidation = [app.requireAdmin, route.preValidation ?? []].flat()
  })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    // The bearer check accepts a token whose session is revoked (logout stays idempotent).
    allowRevokedSession?: boolean
    // Only callers whose stored role is this (403 otherwise), checked after the bearer check.
    role?: 'ADMIN'
  }
}
