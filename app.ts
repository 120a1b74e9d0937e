import type { Server } from 'node:http'
import type { FastifyHttpOptions, FastifyInstance, FastifyServerOptions } from 'fastify'
import autoload from '@fastify/autoload'
import proxyAddr from '@fastify/proxy-addr'
import { LRUCache } from 'lru-cache'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import type { Config } from './lib/config.ts'
import type { DatabaseHandle } from './db/index.ts'
import { loggerOptions, requestChildLogger } from './lib/logger.ts'
import configPlugin from './plugins/app/config.ts'
import { schemaErrorFormatter, strictValidatorFactory } from './plugins/app/validation.ts'
import { sharedSerializerFactory } from './plugins/app/serialization.ts'
import { clientErrorHandler, frameworkErrorHandler } from './plugins/app/errors.ts'
import requestIdPlugin from './plugins/app/request-id.ts'
import { genReqId } from './lib/request-id.ts'
import type { DeferredCompilers } from './lib/compile-once.ts'

const root = dirname(fileURLToPath(import.meta.url))
// The sources run as TypeScript through tsx's --import hook, which @fastify/autoload cannot detect by itself.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT ??= '1'

export interface AppOptions {
  config: Config
  // An already open database (tests); otherwise the app opens one from the configuration.
  db?: DatabaseHandle
}

// Addresses whose trust a TRUST_PROXY list remembers: the proxies' own, and those of the clients behind them.
const REMEMBERED_PROXY_ADDRESSES = 10_000

/**
 * TRUST_PROXY: true/false, a hop count, or a comma-separated list of proxy addresses/CIDRs (and proxy-addr's
 * names `loopback`, `linklocal`, `uniquelocal`). A list is decided by proxy-addr's own test, the one Fastify
 * would compile from it, remembered per address: Fastify asks it about every hop of a request's
 * X-Forwarded-For whenever `request.ip` is read (the rate limiter reads it on every request), and it parses
 * the address each time, 1–8 µs a request against 0.1–0.9 µs remembered.
 */
export function trustProxySetting (value: string | undefined): FastifyServerOptions['trustProxy'] {
  if (value === undefined || value === '' || value === 'false') return false
  if (value === 'true') return true
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address: string, hop: number) => hop < hops
  }
  let trusted: (address: string, hop: number) => boolean
  try {
    trusted = proxyAddr.compile(value.split(',').map((s) => s.trim()))
  } catch (err) {
    throw new Error(`TRUST_PROXY: ${(err as Error).message} (expected true, false, a hop count, or comma-separated proxy addresses or CIDRs)`)
  }
  // A listed address is trusted at any hop: proxy-addr's test of a list looks at the address alone.
  const seen = new LRUCache<string, boolean>({ max: REMEMBERED_PROXY_ADDRESSES, memoMethod: (address) => trusted(address, 0) })
  return (address: string, hop: number) => typeof address === 'string' ? seen.memo(address) : trusted(address, hop)
}

/**
 * Compiles the route schemas no request has needed yet, one per turn of the event loop so requests go
 * between them, beginning after `delayMs`; resolves with how many it compiled. A schema that does not
 * compile rejects (the tests compile every one: test/ops/start-up.test.ts).
 */
export async function compileSchemasInBackground (options: FastifyServerOptions, delayMs = 0): Promise<number> {
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
  const factories = options.schemaController?.compilersFactory ?? {}
  const compilers = [factories.buildValidator, factories.buildSerializer] as unknown as Array<Partial<DeferredCompilers> | undefined>
  let compiled = 0
  for (const compiler of compilers) {
    if (typeof compiler?.compilePending !== 'function') continue
    for (let done = 1; done > 0; compiled += done) {
      await new Promise((resolve) => setImmediate(resolve))
      done = compiler.compilePending(1)
    }
  }
  return compiled
}

/** The Fastify server options the app is built for: the process entry and the tests both use them. */
export function serverOptions (config: Config): FastifyHttpOptions<Server> {
  return {
    logger: loggerOptions(config.LOG_LEVEL),
    childLoggerFactory: requestChildLogger,
    // The caller's x-request-id when it is safe to keep, otherwise a new UUID; answers carry it back.
    requestIdHeader: false,
    genReqId,
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    // `/api/v1/placemarks` and `/api/v1/placemarks/` are one route (so the OpenAPI document lists the seed's
    // path, without the slash), and every path answers with or without a trailing slash.
    routerOptions: { ignoreTrailingSlash: true },
    // Unknown properties are refused (schemas that allow them say so), never silently dropped: on the
    // dataset routes an unknown query parameter would otherwise make every URL its own cache entry.
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false, useDefaults: true, allErrors: false } },
    // Fastify's Ajv compiler, each validator followed by one check for every route: non-finite numbers
    // (`1e309`, `Infinity`) and NUL characters are refused as 400s.
    // Fastify's serializer compiler, each distinct response schema compiled once (plugins/app/serialization.ts).
    // Both compile a schema at its first use, or after the server listens (compileSchemasInBackground).
    schemaController: { compilersFactory: { buildValidator: strictValidatorFactory(), buildSerializer: sharedSerializerFactory() } },
    schemaErrorFormatter,
    // Errors the router raises before any hook (a malformed escape, an over-long parameter) keep the
    // {error, message} contract and the CORS headers.
    frameworkErrors: frameworkErrorHandler(config),
    // Errors of the HTTP parser (bad headers, a request timeout) are answered on the socket itself.
    clientErrorHandler,
    // The first start on the embedded database migrates and seeds it, which a busy machine can take
    // longer than Fastify's default 10 s per plugin to do.
    pluginTimeout: 120_000,
    // A request trickled in slowly is cut off (408) once REQUEST_TIMEOUT_MS has passed since it began;
    // Node checks open connections against it every second.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    http: { headersTimeout: Math.min(10_000, config.REQUEST_TIMEOUT_MS), connectionsCheckingInterval: 1000 },
    return503OnClosing: true,
    // Closing drains connections itself (plugins/app/connections.ts): an answer already handed to a slow
    // reader's socket is let through, not cut with it.
    forceCloseConnections: false
  }
}

/**
 * The whole service as one Fastify plugin: the configuration, the third-party plugins with their
 * options (plugins/external), the app's own decorators (plugins/app), then the routes, which declare
 * what they need in their route config (datasetCache, geojson, allowRevokedSession) and OpenAPI security.
 */
export default async function app (fastify: FastifyInstance, opts: AppOptions): Promise<void> {
  await fastify.register(configPlugin, { config: opts.config })
  await fastify.register(requestIdPlugin)
  await fastify.register(autoload, { dir: join(root, 'plugins/external'), forceESM: true })
  await fastify.register(autoload, { dir: join(root, 'plugins/app'), forceESM: true, options: { handle: opts.db } })
  // A folder named in parentheses groups routes under a scope of their own without adding to the URL.
  await fastify.register(autoload, { dir: join(root, 'routes'), forceESM: true, autoHooks: true, cascadeHooks: true, dirNameRoutePrefix: (_parent: string, name: string) => (name.startsWith('(') ? false : name) })
}
