import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'

/**
 * The CSP source of a tile URL template's origin: `https://{s}.tile.example.org/{z}/{x}/{y}.png` is
 * `https://*.tile.example.org`. A placeholder anywhere but the first label leaves the scheme alone.
 */
export function tileSource (template: string | undefined): string[] {
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
export function contentSecurityPolicy (mapTileUrl: string | undefined) {
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
 * `GET /` of a page's plugin: its HTML, never cached stale, with a Content-Security-Policy of its own
 * (the directives given, written once here at start-up) where this server sets the security headers.
 */
export function pageRoute (app: FastifyInstance, html: string, directives: Record<string, string[]>): void {
  const policy = app.config.SECURITY_HEADERS
    ? helmetHeaders({ contentSecurityPolicy: { useDefaults: false, directives } })['content-security-policy']
    : undefined
  app.get('/', { schema: { hide: true } }, async (_request, reply) => {
    if (policy) reply.header('content-security-policy', policy)
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html)
  })
}

/** helmet's options: its defaults but the legacy headers, with the policy above. */
export function helmetOptions (mapTileUrl: string | undefined): HelmetOptions {
  return {
    contentSecurityPolicy: contentSecurityPolicy(mapTileUrl),
    // Headers only legacy clients read (Internet Explorer, Flash, the old XSS auditors): each costs on every answer.
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false
  }
}

/**
 * The headers helmet sets for these options, read once from its own middleware: helmet's policy code
 * decides every name and value, and nothing in them depends on the request.
 */
export function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const response = {
    setHeader (name: string, value: string | number | readonly string[]) { headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value) },
    removeHeader (name: string) { delete headers[name.toLowerCase()] }
  }
  let failure: unknown
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (err?: unknown) => { failure = err })
  if (failure) throw failure instanceof Error ? failure : new Error(String(failure))
  return headers
}

/**
 * Security headers on every answer (cached ones, 304s, errors, 404s, refusals and the HTML pages),
 * set in one onRequest hook from a set computed at start-up. @fastify/helmet would run helmet's
 * middleware, rebuilt from its options, on every request (28 µs a request measured, against under
 * 1 µs here) for the same headers. SECURITY_HEADERS=false leaves them to a proxy in front.
 */
export default fp(async function securityHeaders (app: FastifyInstance) {
  if (!app.config.SECURITY_HEADERS) return
  const headers = helmetHeaders(helmetOptions(app.config.MAP_TILE_URL))
  const names = Object.keys(headers)
  const values = names.map((name) => headers[name]!)
  app.addHook('onRequest', (_request, reply, done) => {
    for (let i = 0; i < names.length; i++) reply.header(names[i]!, values[i])
    done()
  })
}, { name: 'security-headers', dependencies: ['config'] })
