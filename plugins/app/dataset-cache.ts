import fp from 'fastify-plugin'
import { createHash } from 'node:crypto'
import { gzip } from 'node:zlib'
import { promisify } from 'node:util'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify'
import { LRUCache } from 'lru-cache'
import { Negotiator } from '@fastify/accept-negotiator'
import { datasetVersion } from '../../db/placemarks.ts'
import { addVary } from '../../lib/vary.ts'
import { etagHeaders, notModified as notModifiedAnswer } from '../../schemas/common.ts'

/** One kept answer: its bytes as sent, plain and (when worth it) gzipped, with its ETag and content type. */
interface CachedAnswer {
  // 200, or the status its handler set (204: an empty vector tile).
  status: number
  body: Buffer
  type: string
  gzip: Buffer | null
  // Strong tags, one per encoding (RFC 9110: each representation its own).
  etag: string
  gzipEtag: string
}

interface Computation {
  request: FastifyRequest
  reply: FastifyReply
  handler: RouteHandlerMethod
  app: FastifyInstance
  // The dataset version the computation started on: its ETag names that version.
  version: number
}

declare module 'fastify' {
  interface FastifyContextConfig {
    // The route's answers depend on the dataset and the validated request alone: kept until the next import.
    datasetCache?: boolean
  }
  interface FastifyInstance {
    datasetVersion: { current(): number; refresh(): Promise<number>; onChange(listener: (version: number) => void): void }
    datasetCache: {
      /** Makes a GET route's answers cached per URL; its handler must return the payload. */
      cacheRoute(route: RouteOptions): void
      /**
       * Sends an answer computed afresh (a route not worth caching: the box query), gzipped when the
       * client takes it, with the same negotiation and `Vary` as the cached answers; no ETag.
       */
      sendFresh(request: FastifyRequest, reply: FastifyReply, body: Buffer, type: string): Promise<FastifyReply>
      readonly size: number
    }
  }
}

const GZIP_MIN_BYTES = 1024
const gzipAsync = promisify(gzip)
// Past this size an answer's hash is computed off the event loop too.
const OFF_LOOP_BYTES = 256 * 1024
const CACHE_CONTROL = 'public, max-age=0, must-revalidate'
const JSON_TYPE = 'application/json; charset=utf-8'

// How many different answers are computed at once; more wait their turn (each can take megabytes and
// tens of milliseconds of serializing), so a burst of distinct URLs cannot take the whole process.
const CONCURRENT_COMPUTATIONS = 4
// How many fresh answers are compressed at once (libuv's thread pool has four threads); more wait their turn.
const CONCURRENT_COMPRESSIONS = 4
// A fresh answer is compressed for every request: the fastest level, most of the gain (JSON compresses well at any level).
const FRESH_GZIP_LEVEL = 1

/** At most `max` calls of fn running at once; the others wait their turn, first come first served. */
function limiter (max: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0
  const waiting: (() => void)[] = []
  return async (fn) => {
    if (running >= max) await new Promise<void>((resolve) => waiting.push(resolve))
    running++
    try {
      return await fn()
    } finally {
      running--
      waiting.shift()?.()
    }
  }
}

/**
 * `If-None-Match` with the weak comparison RFC 9110 §13.1.2 prescribes for it (`W/"x"` matches `"x"`),
 * against either encoding's tag: both stand for the same answer of the same dataset version.
 */
function notModified (request: FastifyRequest, answer: CachedAnswer): boolean {
  const header = request.headers['if-none-match']
  if (header === undefined) return false
  if (header === '*') return true
  for (const raw of header.split(',')) {
    const tag = raw.trim()
    const opaque = tag.startsWith('W/') ? tag.slice(2) : tag
    if (opaque === answer.etag || opaque === answer.gzipEtag) return true
  }
  return false
}

/** The cache key of a request: the route, its validated parameters and query, canonically ordered (`limit=010`, `limit=1e1` and `limit=10` are one answer). */
function canonical (values: unknown): string {
  if (values === null || typeof values !== 'object') return ''
  const keys = Object.keys(values)
  if (keys.length === 0) return ''
  keys.sort()
  let out = ''
  for (const key of keys) {
    // The content type is the key's variant, not a parameter: ?format=geojson, ?f=geojson and Accept: application/geo+json are one answer.
    if (key !== 'format' && key !== 'f') out += `${key}=${JSON.stringify((values as Record<string, unknown>)[key])}&`
  }
  return out
}

/**
 * Placemark data changes only by import, so each answer of a dataset route is kept serialized per URL,
 * as ready bytes (plain and gzip) with its ETag, and sent through Fastify's reply until the dataset
 * version changes: every hook of every plugin still sees the request and the answer. An import's
 * commit reaches every instance on the change bus, which drops its cache at once. Concurrent misses of
 * one URL share one computation (lru-cache's fetch).
 */
export default fp(async function datasetCache (app: FastifyInstance) {
  const cache = new LRUCache<string, CachedAnswer, Computation>({
    max: 10_000,
    maxSize: 128 * 1024 * 1024,
    sizeCalculation: (answer, url) => answer.body.length + (answer.gzip?.length ?? 0) + url.length,
    // An import landing mid-computation clears the cache: the answer is still sent, but not kept.
    ignoreFetchAbort: true,
    fetchMethod: (_url, _stale, { context }) => compute(context)
  })
  const encodings = new Negotiator({ supportedValues: ['gzip', 'identity'], cache: new LRUCache<string, string>({ max: 1000 }) })

  let version = -1
  const listeners: ((version: number) => void)[] = []
  const refresh = async (): Promise<number> => {
    const next = await datasetVersion(app.db)
    if (next !== version) {
      cache.clear()
      version = next
      for (const listener of listeners) listener(version)
    }
    return version
  }
  await refresh()
  app.decorate('datasetVersion', { current: () => version, refresh, onChange: (listener: (version: number) => void) => { listeners.push(listener) } })

  // An import's commit announces its version on the change bus (and the bus's fallback read of the
  // log catches a lost notification). While the database is away the cached answers stay valid: they
  // only change by import.
  app.changes.on('dataset', () => {
    refresh().catch((err: unknown) => app.log.debug({ err }, 'dataset version check failed'))
  })

  // The computed payload, serialized by the route's own serializer, as a kept answer; a payload already
  // in bytes (a GeoJSON answer) is kept as it is, with the content type its handler set.
  // Compressed on libuv's thread pool, off the event loop: a miss of a multi-megabyte page does not hold
  // up every other client's answer.
  async function keep ({ reply, version }: Computation, payload: unknown): Promise<CachedAnswer> {
    const bytes = Buffer.isBuffer(payload)
    const body = bytes ? payload : Buffer.from(reply.serialize(payload) as string)
    const type = bytes ? String(reply.getHeader('content-type') ?? JSON_TYPE) : JSON_TYPE
    // Hashed and compressed on the thread pool when the answer is large.
    const [digest, gzip] = await Promise.all([
      body.length >= OFF_LOOP_BYTES ? crypto.subtle.digest('SHA-1', new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength)).then((d) => Buffer.from(d)) : createHash('sha1').update(body).digest(),
      body.length >= GZIP_MIN_BYTES ? gzipAsync(body, { level: 6 }) : null
    ])
    const hash = digest.toString('base64url').slice(0, 22)
    return { status: reply.statusCode, body, type, gzip, etag: `"${version}-${hash}"`, gzipEtag: `"${version}-${hash}-gzip"` }
  }

  const computing = limiter(CONCURRENT_COMPUTATIONS)
  async function compute (context: Computation): Promise<CachedAnswer> {
    return computing(async () => keep(context, await context.handler.call(context.app, context.request, context.reply)))
  }

  // Whether the request takes the gzip encoding (and the answer is worth compressing).
  const takesGzip = (request: FastifyRequest, length: number): boolean => {
    const accepted = length >= GZIP_MIN_BYTES ? request.headers['accept-encoding'] : undefined
    return accepted !== undefined && encodings.negotiate(accepted) === 'gzip'
  }

  const compressing = limiter(CONCURRENT_COMPRESSIONS)
  async function sendFresh (request: FastifyRequest, reply: FastifyReply, body: Buffer, type: string): Promise<FastifyReply> {
    addVary(reply, 'accept-encoding')
    reply.header('content-type', type)
    if (!takesGzip(request, body.length)) return reply.send(body)
    // Compressed on libuv's thread pool, off the event loop, a few at a time.
    const gzipped = await compressing(() => gzipAsync(body, { level: FRESH_GZIP_LEVEL }))
    return reply.header('content-encoding', 'gzip').send(gzipped)
  }

  function send (request: FastifyRequest, reply: FastifyReply, answer: CachedAnswer): FastifyReply {
    const gzip = answer.gzip !== null && takesGzip(request, answer.body.length)
    reply.header('etag', gzip ? answer.gzipEtag : answer.etag).header('cache-control', CACHE_CONTROL)
    addVary(reply, 'accept-encoding')
    if (notModified(request, answer)) return reply.code(304).send()
    if (answer.status === 204) return reply.code(204).send()
    reply.header('content-type', answer.type)
    if (gzip) return reply.header('content-encoding', 'gzip').send(answer.gzip)
    return reply.send(answer.body)
  }

  // dataset_cache_requests_total{result}: answers sent from the cache (hit) or computed for it (miss).
  const cacheRequests = app.appMetrics.datasetCache
  const HIT = { result: 'hit' }
  const MISS = { result: 'miss' }
  app.decorate('datasetCache', {
    cacheRoute (route: RouteOptions) {
      const handler = route.handler
      // A route that can answer GeoJSON keeps that variant as its own entry (the Accept header chooses it too).
      const variants = route.config?.geojson !== undefined
      const path = `${route.url} `
      route.handler = function cachedHandler (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const key = `${variants && request.wantsGeoJson() ? 'geojson ' : ''}${path}${canonical(request.params)}?${canonical(request.query)}`
        const hit = cache.get(key)
        if (hit !== undefined) {
          cacheRequests.inc(HIT)
          return send(request, reply, hit)
        }
        cacheRequests.inc(MISS)
        return cache.fetch(key, { context: { request, reply, handler, app: this, version } })
          .then((answer) => send(request, reply, answer!))
      }
    },
    sendFresh,
    get size () {
      return cache.size
    }
  })
  // A GET route declaring `config.datasetCache` is cached; unknown query parameters are refused there (400),
  // since each would otherwise make another URL of the same answer, and its document gets the ETag and 304.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.datasetCache !== true) return
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.includes('GET') && !methods.includes('HEAD')) return
    const schema = (route.schema ??= {}) as { querystring?: { type?: string, properties?: object, additionalProperties?: unknown }, response?: Record<string, unknown> }
    schema.querystring = { type: 'object', properties: {}, ...schema.querystring, additionalProperties: schema.querystring?.additionalProperties ?? false }
    app.datasetCache.cacheRoute(route)
    const ok = schema.response?.['200'] as { headers?: object } | undefined
    if (ok !== undefined) schema.response = { ...schema.response, 200: { ...ok, headers: { ...ok.headers, ...etagHeaders } }, 304: notModifiedAnswer }
  })
}, { name: 'dataset-cache', dependencies: ['config', 'db', 'metrics', 'changes', 'geojson'] })
