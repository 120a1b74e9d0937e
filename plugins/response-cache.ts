import fp from 'fastify-plugin'
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import { LruCache } from '../lib/lru.ts'
import { addVary, varyWith } from './cors.ts'
import { addRouteHook } from '../lib/route-hooks.ts'
import { writeRateLimitHeaders, type RateLimitSetting } from './rate-limit.ts'
import type { FrontHeaders } from './front-door.ts'

interface CachedResponse {
  body: Buffer
  gzip: Buffer | null
  etag: string
  version: number
  // The route's rate limit, which a hit answered by the front door counts against.
  rateLimit: RateLimitSetting
}

declare module 'fastify' {
  interface FastifyInstance {
    datasetVersion: { current(): number; refresh(): Promise<number>; onChange(listener: (version: number) => void): void }
  }
  interface FastifyRequest {
    datasetCacheVersion: number
    // The miss this request is computing for others to share, if it is the first one for its URL.
    datasetCacheFlight: Flight | null
  }
  interface FastifyContextConfig {
    // Routes whose answers depend only on the imported dataset and the URL.
    datasetCache?: boolean
  }
}

/**
 * A miss being computed: later requests for the same URL and dataset version wait for it instead of
 * running the same queries again (after an import, a burst on an expensive URL such as the stats of a
 * million placemarks would otherwise run one copy per request and time out together).
 */
interface Flight {
  url: string
  version: number
  waiters: (() => void)[]
  timer: NodeJS.Timeout
}

const GZIP_MIN_BYTES = 1024

const CACHE_CONTROL = 'public, max-age=0, must-revalidate'

// What an entry answers to a request: null for "not modified" (its ETag matches), else the gzip or the plain bytes.
function choose(request: IncomingHttpHeaders, entry: CachedResponse): Buffer | null {
  if (request['if-none-match'] === entry.etag) return null
  return entry.gzip && /\bgzip\b/.test(request['accept-encoding'] ?? '') ? entry.gzip : entry.body
}

/** Writes an entry as the answer: the given headers (CORS, rate limit) with the cached ones, then its bytes. */
function write(req: IncomingMessage, res: ServerResponse, headers: FrontHeaders, entry: CachedResponse): void {
  headers.etag = entry.etag
  headers['cache-control'] = CACHE_CONTROL
  // Added to what CORS set (Origin), not in its place.
  headers.vary = varyWith(headers.vary, 'accept-encoding')
  const body = choose(req.headers, entry)
  if (body === null) {
    res.writeHead(304, headers).end()
    return
  }
  headers['content-type'] = 'application/json; charset=utf-8'
  headers['content-length'] = body.length
  if (body === entry.gzip) headers['content-encoding'] = 'gzip'
  res.writeHead(200, headers).end(body)
}

export interface ResponseCacheOptions {
  pollMs?: number
  maxEntries?: number
  maxBytes?: number
}

/**
 * Placemark data changes only by import, so each answer is kept serialized per URL and reused until
 * the dataset version (bumped by every import) changes. Every instance polls the version, so an import
 * shows on all of them within one poll interval.
 */
export default fp(async function responseCache(app: FastifyInstance, opts: ResponseCacheOptions) {
  const cache = new LruCache<CachedResponse>(opts.maxEntries ?? 10_000, opts.maxBytes ?? 128 * 1024 * 1024)
  let version = -1
  const listeners: ((version: number) => void)[] = []

  const readVersion = async (): Promise<number> => {
    const { rows } = await sql<{ version: number | null }>`SELECT max(version)::int AS version FROM dataset`.execute(app.db)
    return rows[0]?.version ?? 0
  }
  const refresh = async (): Promise<number> => {
    const next = await readVersion()
    if (next !== version) {
      cache.clear()
      version = next
      for (const listener of listeners) listener(version)
    }
    return version
  }
  await refresh()
  app.decorate('datasetVersion', { current: () => version, refresh, onChange: (listener: (version: number) => void) => { listeners.push(listener) } })

  const pollMs = opts.pollMs ?? app.config.CACHE_VERSION_POLL_MS
  const timer = setInterval(() => {
    // While the database is away the cached answers stay valid: they only change by import.
    refresh().catch((err: unknown) => app.log.debug({ err }, 'dataset version poll failed'))
  }, pollMs)
  timer.unref()
  app.addHook('onClose', async () => clearInterval(timer))

  /**
   * A hit found inside Fastify (app.inject, or a request the front door passed on) is written straight
   * to the socket: the headers the earlier onRequest hooks set (CORS) or recorded (the rate limit's)
   * plus the cached ones. Fastify's onResponse hooks and request log still see the reply finish.
   */
  const send = (request: FastifyRequest, reply: FastifyReply, entry: CachedResponse) => {
    // getHeaders() is a fresh object: add to it in place.
    const headers = reply.getHeaders() as FrontHeaders
    writeRateLimitHeaders(request, headers)
    reply.hijack()
    write(request.raw, reply.raw, headers, entry)
  }

  /**
   * Most hits never reach Fastify: the front door answers them from the HTTP server's request handler,
   * with what the framework path would add (CORS headers, the rate-limit count and headers, the request
   * log at info level), and passes everything else on. On a small cached body this about halves the
   * server's work per request.
   */
  app.frontDoor.use((req, res, next) => {
    const entry = req.method === 'GET' ? cache.get(req.url ?? '') : undefined
    if (entry === undefined || entry.version !== version) next(req, res)
    else app.answerAtFrontDoor(req, res, next, entry.rateLimit, write, entry)
  })

  const flights = new Map<string, Flight>()
  // The first request's answer is in the cache now, or it was not kept (an error, a 404, an import
  // meanwhile): the waiters are served from the cache, or else each runs the route itself.
  // Lands once: the first request's onSend or the timer, whichever comes first, takes the waiters.
  const land = (flight: Flight) => {
    clearTimeout(flight.timer)
    // A newer version's flight for the URL may have taken the slot.
    if (flights.get(flight.url) === flight) flights.delete(flight.url)
    const waiters = flight.waiters
    flight.waiters = []
    for (const resume of waiters) resume()
  }
  app.addHook('onClose', async () => {
    for (const flight of flights.values()) clearTimeout(flight.timer)
  })
  // A first request that never reaches onSend (its client left and its handler gave up) must not hold
  // the others: past the longest a query can take, they go on by themselves.
  const flightMaxMs = (app.config.DB_STATEMENT_TIMEOUT_MS || 30_000) + app.config.DB_CONNECTION_TIMEOUT_MS + 1000

  app.decorateRequest('datasetCacheVersion', -1)
  app.decorateRequest('datasetCacheFlight', null)
  // Callback style: a hit is written at once, and a miss goes on without a promise in between.
  const lookup = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (request.method !== 'GET') {
      done()
      return
    }
    request.datasetCacheVersion = version
    const url = request.url
    const entry = cache.get(url)
    if (entry && entry.version === version) {
      send(request, reply, entry)
      return
    }
    const flight = flights.get(url)
    if (flight && flight.version === version) {
      flight.waiters.push(() => {
        const landed = cache.get(url)
        if (landed && landed.version === request.datasetCacheVersion) send(request, reply, landed)
        else done()
      })
      return
    }
    const started: Flight = { url, version, waiters: [], timer: setTimeout(() => land(started), flightMaxMs).unref() }
    flights.set(url, started)
    request.datasetCacheFlight = started
    done()
  }

  // A fresh 200 of a dataset route: kept, then answered like a hit would be (304, gzip or plain).
  const keep = (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown => {
    if (request.method !== 'GET' || reply.statusCode !== 200) return payload
    if (reply.getHeader('content-encoding') || typeof payload !== 'string') return payload
    // An import that landed while this request ran may have changed the data it read: don't keep it.
    if (request.datasetCacheVersion !== version) return payload
    const body = Buffer.from(payload)
    const hash = createHash('sha1').update(body).digest('base64url').slice(0, 22)
    const entry: CachedResponse = {
      body,
      gzip: body.length >= GZIP_MIN_BYTES ? gzipSync(body, { level: 6 }) : null,
      etag: `"${version}-${hash}"`,
      version,
      rateLimit: request.routeOptions.config.rateLimit ?? false
    }
    cache.set(request.url, entry, body.length + (entry.gzip?.length ?? 0) + request.url.length)
    reply.headers({ etag: entry.etag, 'cache-control': CACHE_CONTROL })
    addVary(reply, 'accept-encoding')
    const chosen = choose(request.headers, entry)
    if (chosen === null) {
      reply.code(304)
      return ''
    }
    if (chosen === entry.gzip) {
      reply.header('content-encoding', 'gzip')
      return entry.gzip
    }
    return payload
  }
  const store = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const flight = request.datasetCacheFlight
    done(null, keep(request, reply, payload))
    // After this answer is on its way: the others then take the kept one from the cache.
    if (flight !== null) {
      request.datasetCacheFlight = null
      land(flight)
    }
  }

  // Both run only on the dataset routes: the lookup as a route-level onRequest hook, appended after the
  // rate limiter's so cached answers (and waits for a shared miss) still count against the limit, and the
  // store as their onSend hook.
  app.addHook('onRoute', (route) => {
    if (!route.config?.datasetCache) return
    addRouteHook(route, 'onRequest', lookup, 'last')
    addRouteHook(route, 'onSend', store, 'last')
  })
}, { name: 'response-cache', dependencies: ['config', 'db', 'front-door'] })
