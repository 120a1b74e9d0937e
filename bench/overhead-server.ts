/**
 * One server of the per-piece cost table (bench/overhead.ts): a Fastify server with the app's own
 * options and error contract, answering one small JSON route, with only the named pieces of the
 * request path switched on, each registered through the very plugin file the app uses. Prints its
 * port (and, with the bearer check, a valid access token) on stdout once listening.
 *
 *   node --import ./scripts/typescript.mjs bench/overhead-server.ts <variant> [piece ...]
 *
 * Variants: `pieces` (the named pieces on a base server), `app` (the whole app, production defaults,
 * on the sample data), `fastify` (a bare Fastify server).
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { pathToFileURL } from 'node:url'
import app, { serverOptions } from '../app.ts'
import { loadConfig } from '../lib/config.ts'
import { migrateToLatest, openDatabase } from '../db/index.ts'
import configPlugin from '../plugins/app/config.ts'
import errorsPlugin from '../plugins/app/errors.ts'
import requestIdPlugin from '../plugins/app/request-id.ts'
import dbPlugin from '../plugins/app/db.ts'
import datasetCachePlugin from '../plugins/app/dataset-cache.ts'
import changesPlugin from '../plugins/app/changes.ts'
import geojsonPlugin from '../plugins/app/geojson.ts'
import authPlugin from '../plugins/app/auth.ts'
import corsPlugin from '../plugins/external/cors.ts'
import redisPlugin from '../plugins/external/redis.ts'
import rateLimitPlugin from '../plugins/external/rate-limit.ts'
import metricsPlugin from '../plugins/external/metrics.ts'
import securityHeadersPlugin from '../plugins/external/security-headers.ts'
import underPressurePlugin from '../plugins/external/under-pressure.ts'
import jwtPlugin from '../plugins/external/jwt.ts'
import { warmUpNextTick } from '../lib/next-tick-warm-up.ts'

export const PIECES = ['request-id', 'cors', 'rate-limit', 'shedding', 'headers', 'metrics', 'validator', 'cache', 'bearer'] as const
export type Piece = typeof PIECES[number]
export const PATH = '/answer'

// The stats answer's shape and size (about 330 bytes).
const ANSWER = {
  total_placemarks: 57,
  total_styles: 12,
  geometry_types: { LineString: 6, Point: 43, Polygon: 8 },
  top_folders: { Downtown: 14, 'The Strip': 11, 'Parks and trails': 9, Museums: 7, Restaurants: 6, Hotels: 5, Shows: 3, Transit: 2 }
}
const ANSWER_BYTES = Buffer.from(JSON.stringify(ANSWER))

const env = {
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  LOG_FORMAT: 'json',
  PGLITE_DIR: 'memory://',
  RATE_LIMIT_MAX: '1000000000',
  JWT_SECRET: 'overhead-access-secret-0123456789abcdefghijkl',
  JWT_REFRESH_SECRET: 'overhead-refresh-secret-0123456789abcdefghijk',
  IDP_CLIENT_ID: 'bench',
  IDP_CLIENT_SECRET: 'bench',
  IDP_REDIRECT_URI: 'http://127.0.0.1/cb',
  IDP_AUTHORIZE_URL: 'http://127.0.0.1/a',
  IDP_TOKEN_URL: 'http://127.0.0.1/t',
  IDP_USER_URL: 'http://127.0.0.1/u',
  IDP_GUILDS_URL: 'http://127.0.0.1/g',
  PUBLIC_URL: 'http://127.0.0.1'
}

async function piecesServer (pieces: Set<Piece>): Promise<{ server: FastifyInstance; token?: string }> {
  const config = loadConfig({
    ...env,
    SECURITY_HEADERS: String(pieces.has('headers')),
    METRICS: String(pieces.has('metrics')),
    MAX_EVENT_LOOP_DELAY_MS: pieces.has('shedding') ? '1000' : '0',
    MAX_HEAP_USED_BYTES: pieces.has('shedding') ? '' : '0'
  })
  const options: FastifyServerOptions = { ...serverOptions(config) }
  if (!pieces.has('request-id')) {
    delete options.genReqId
    delete options.requestIdHeader
  }
  if (!pieces.has('validator')) delete options.schemaController
  const server = Fastify(options)
  await server.register(configPlugin, { config })
  // Always there, so that the pieces' declared dependencies resolve: the counters (METRICS=false: no hooks),
  // the security headers (off unless asked for) and the error contract.
  await server.register(metricsPlugin)
  await server.register(securityHeadersPlugin)
  await server.register(errorsPlugin)
  if (pieces.has('request-id')) await server.register(requestIdPlugin)
  if (pieces.has('cors')) await server.register(corsPlugin)
  await server.register(redisPlugin)
  if (pieces.has('rate-limit')) await server.register(rateLimitPlugin)
  if (pieces.has('shedding')) await server.register(underPressurePlugin)
  if (pieces.has('cache') || pieces.has('bearer')) {
    const handle = await openDatabase({ pgliteDir: 'memory://' })
    await migrateToLatest(handle.db)
    await server.register(dbPlugin, { handle })
    await server.register(changesPlugin)
  }
  if (pieces.has('cache')) {
    await server.register(geojsonPlugin)
    await server.register(datasetCachePlugin)
  }
  if (pieces.has('bearer')) {
    await server.register(jwtPlugin)
    await server.register(authPlugin)
  }
  await server.register(async (scope) => {
    if (pieces.has('cache')) scope.addHook('onRoute', (route: RouteOptions) => server.datasetCache.cacheRoute(route))
    scope.get(PATH, {
      ...(pieces.has('bearer') ? { preParsing: server.authenticate } : {}),
      schema: {
        querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 1000 } }, additionalProperties: false },
        response: { 200: { type: 'object', additionalProperties: true } }
      }
    }, async (_request, reply) => (pieces.has('cache') ? ANSWER : reply.type('application/json; charset=utf-8').send(ANSWER_BYTES)))
  })
  await server.ready()
  const token = pieces.has('bearer')
    ? server.tokens.access({ id: '00000000-0000-4000-8000-000000000001', provider_id: '1', username: 'bench', discriminator: '0001', avatar: null, role: 'USER', created_at: new Date(), updated_at: new Date() }, '00000000-0000-4000-8000-000000000002')
    : undefined
  return { server, token }
}

async function appServer (): Promise<FastifyInstance> {
  const config = loadConfig({ ...env, SEED_SAMPLE_DATA: 'true' })
  const server = Fastify(serverOptions(config))
  await server.register(fp(app, { name: 'app' }), { config })
  await server.ready()
  return server
}

function bareFastify (options: FastifyServerOptions = { logger: false }): FastifyInstance {
  const server = Fastify(options)
  server.get(PATH, (_request, reply) => { reply.type('application/json; charset=utf-8').send(ANSWER_BYTES) })
  return server
}

async function main (): Promise<void> {
  const [variant = 'pieces', ...names] = process.argv.slice(2)
  const unknown = names.filter((n) => !(PIECES as readonly string[]).includes(n))
  if (unknown.length) throw new Error(`unknown pieces: ${unknown.join(', ')}`)
  const config = () => loadConfig(env)
  const variants: Record<string, () => Promise<{ server: FastifyInstance; token?: string }>> = {
    app: async () => ({ server: await appServer() }),
    fastify: async () => ({ server: bareFastify() }),
    // Experiments on the base: bare Fastify with the app's logger, or with the app's options but no logger.
    'fastify-logger': async () => ({ server: bareFastify({ logger: serverOptions(config()).logger, childLoggerFactory: serverOptions(config()).childLoggerFactory }) }),
    'fastify-options': async () => ({ server: bareFastify({ ...serverOptions(config()), logger: false, genReqId: undefined }) }),
    pieces: () => piecesServer(new Set(names as Piece[]))
  }
  const build = variants[variant]
  if (!build) throw new Error(`unknown variant ${variant}`)
  // Our servers start as server.ts does; the bare Fastify peer is left as it is.
  if (variant !== 'fastify') await warmUpNextTick()
  const built = await build()
  await built.server.listen({ port: 0, host: '127.0.0.1' })
  const address = built.server.server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, token: built.token })}\n`)
}

// Run as a program; imported (by bench/overhead.ts), it only lends its names.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
// A profile (--cpu-prof) is written when the process exits by itself.
process.on('SIGTERM', () => process.exit(0))
