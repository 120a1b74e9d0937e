import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'

/**
 * The CSP source of a tile URL template's origin: `https://{s}.tile.example.org/{z}/{x}/{y}.png` is
 * `https://*.tile.example.org`. A placeholder anywhere but the first label leaves the scheme alone.
 */
export function tileSource(template: string | undefined): string[] {
  const match = template && /^(https?:)\/\/([^/?#]+)/i.exec(template)
  if (!match) return []
  const [, scheme, host] = match
  const wild = host!.replace(/\{[^}]*\}/g, '*')
  if (!wild.includes('*') || /^\*\.[^*]+$/.test(wild)) return [`${scheme!.toLowerCase()}//${wild.toLowerCase()}`]
  return [scheme!.toLowerCase()]
}

/**
 * The Content-Security-Policy of every answer: the API's JSON and the HTML pages (the docs, the sign-in
 * callback, the development provider, the map) load scripts, styles, fonts and data from this origin
 * only, scripts never inline; images may also be data:/blob: URLs and the map's tiles (MAP_TILE_URL).
 * Inline styles stay allowed (the pages' own <style> and the style attributes of the docs UI).
 */
export function contentSecurityPolicy(mapTileUrl: string | undefined) {
  return {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      baseUri: ["'self'"],
      connectSrc: ["'self'"],
      fontSrc: ["'self'", 'data:'],
      formAction: ["'self'"],
      frameAncestors: ["'self'"],
      imgSrc: ["'self'", 'data:', 'blob:', ...tileSource(mapTileUrl)],
      objectSrc: ["'none'"],
      scriptSrc: ["'self'"],
      scriptSrcAttr: ["'none'"],
      styleSrc: ["'self'", "'unsafe-inline'"]
    }
  }
}

/**
 * Security headers through @fastify/helmet on every answer (helmet's defaults but the legacy ones, and
 * the policy above), set in its onRequest hook, so that cached answers, 304s, errors and refusals carry
 * them too.
 * SECURITY_HEADERS=false leaves them to a proxy in front.
 */
export default fp(async function helmetPlugin(app: FastifyInstance) {
  if (!app.config.SECURITY_HEADERS) return
  await app.register(helmet, {
    contentSecurityPolicy: contentSecurityPolicy(app.config.MAP_TILE_URL),
    // Headers only legacy clients read (Internet Explorer, Flash, the old XSS auditors): each costs on every answer.
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false
  })
}, { name: 'helmet', dependencies: ['config', 'metrics'] })
