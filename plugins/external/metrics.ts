import fp from 'fastify-plugin'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import promClient, { Counter, Gauge, Registry } from 'prom-client'
import type { Metric } from 'prom-client'
import { RequestDurations, type DurationSeries } from '../../lib/metrics/request-durations.ts'
import { isPrivateAddress } from '../../lib/private-address.ts'
import { errorBody } from '../../lib/errors.ts'
import { genReqId, REQUEST_ID_HEADER } from '../../lib/request-id.ts'

/** The app's own metrics; the counters are moved by the code they describe, the gauges read at scrape time. */
export interface AppMetrics {
  registry: Registry
  // dataset_cache_requests_total{result="hit"|"miss"}
  datasetCache: Counter<'result'>
  // signin_attempts_total{outcome}
  signins: Counter<'outcome'>
  // rate_limit_refusals_total{limit="global"|"auth"}
  rateLimited: Counter<'limit'>
  // load_shedding_refusals_total{reason}
  shed: Counter<'reason'>
}

declare module 'fastify' {
  interface FastifyInstance {
    appMetrics: AppMetrics
  }
  interface FastifyRequest {
    // Counted in http_requests_in_flight and not yet counted out.
    metricsOpen: boolean
  }
  interface FastifyContextConfig {
    // Set at the route's registration: how its requests are timed (null: not timed).
    metricsTimer?: RouteTimer | null
  }
}

// A route's timing: its label, and per method the series by status code, each made at its first use.
interface RouteTimer { route: string; methods: Record<string, DurationSeries[] | undefined> }
// Requests of these methods are not timed (as Prometheus middlewares do by default).
const UNTIMED = new Set(['HEAD', 'OPTIONS', 'TRACE', 'CONNECT'])
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export const METRICS_PATH = '/metrics'
// Requests that match no route share this label, so that scanned URLs cannot add series.
const UNMATCHED = '__unmatched__'

/** The app's metrics, each in `registry`; the gauges read their values from the app when scraped. */
function appMetrics (app: FastifyInstance, registry: Registry): AppMetrics {
  const registers = [registry]
  const gauge = <T extends string>(name: string, help: string, labelNames: T[], collect: (this: Gauge<T>) => void) =>
    new Gauge<T>({ name, help, labelNames, registers, collect })
  const has = (name: string) => app.hasDecorator(name)

  gauge('db_pool_connections', 'Database pool connections by state (total, idle) and requests waiting for one (waiting)', ['state'], function () {
    if (!has('dbHandle')) return
    const { pool } = app.dbHandle
    this.set({ state: 'total' }, pool.totalCount)
    this.set({ state: 'idle' }, pool.idleCount)
    this.set({ state: 'waiting' }, pool.waitingCount)
  })
  gauge('dataset_version', 'The served placemark dataset version (0: nothing imported)', [], function () {
    if (has('datasetVersion')) this.set(app.datasetVersion.current())
  })
  const boxStates = ['off', 'loading', 'ready', 'reloading', 'too-big', 'failed'] as const
  gauge('box_index_state', 'The in-process box index: 1 for its current state, 0 for the others', ['state'], function () {
    if (!has('boxIndex')) return
    const state = app.boxIndex.state()
    for (const s of boxStates) this.set({ state: s }, s === state ? 1 : 0)
  })
  gauge('box_index_placemarks', 'Placemarks in the loaded box index (0 when none is loaded)', [], function () {
    if (has('boxIndex')) this.set(app.boxIndex.loaded()?.placemarks ?? 0)
  })
  gauge('box_index_bytes', 'Memory held by the loaded box index, in bytes', [], function () {
    if (has('boxIndex')) this.set(app.boxIndex.loaded()?.bytes ?? 0)
  })
  if (app.config.REDIS_URL) {
    gauge('redis_up', 'Redis (REDIS_URL) is connected and answering: 1, or 0 while the instance falls back to its own state', [], function () {
      this.set(app.redis?.status === 'ready' ? 1 : 0)
    })
  }
  return {
    registry,
    datasetCache: new Counter({ name: 'dataset_cache_requests_total', help: 'Dataset route requests answered from the response cache (hit) or computed (miss)', labelNames: ['result'], registers }),
    signins: new Counter({
      name: 'signin_attempts_total',
      help: 'Sign-ins by outcome: success, refused (a bad code, state or scope), failed (provider or database), blocked (the address is blocked)',
      labelNames: ['outcome'],
      registers
    }),
    rateLimited: new Counter({ name: 'rate_limit_refusals_total', help: 'Requests refused 429 by a rate limit (global, or auth for /api/auth/*)', labelNames: ['limit'], registers }),
    shed: new Counter({ name: 'load_shedding_refusals_total', help: 'Requests refused 503 because the instance was overloaded, by cause', labelNames: ['reason'], registers })
  }
}

/**
 * Prometheus metrics with prom-client, in a registry of this app's own (several apps may share a
 * process): request durations by route pattern, method and status (each series bound at its first use
 * and counted into without allocating), in-flight requests, prom-client's process and event-loop
 * metrics, and the app's own (appMetrics above). GET /metrics serves them on PORT, or with
 * METRICS_PORT on that port only, from a small server of its own. METRICS=false serves nothing and times
 * no route; the counters still exist and cost next to nothing.
 */
export default fp(async function metricsPlugin (app: FastifyInstance) {
  const { config } = app
  const registry = new Registry()
  app.decorate('appMetrics', appMetrics(app, registry))
  if (!config.METRICS) return

  promClient.collectDefaultMetrics({ register: registry })

  // A request ends with its answer, or with its connection when the client goes away first (then
  // possibly both): each is counted out once.
  let inFlight = 0
  registry.registerMetric(new Gauge({ name: 'http_requests_in_flight', help: 'Requests received and not yet answered', registers: [], collect () { this.set(inFlight) } }))
  app.decorateRequest('metricsOpen', false)
  const end = (request: FastifyRequest) => {
    if (request.metricsOpen) {
      request.metricsOpen = false
      inFlight--
    }
  }

  // Request durations by method, route pattern and status, each series bound once and reused.
  const durations = new RequestDurations('http_request_duration_seconds', 'request duration in seconds', DURATION_BUCKETS)
  registry.registerMetric(durations as unknown as Metric)
  const timer = (route: string): RouteTimer => ({ route, methods: Object.create(null) as RouteTimer['methods'] })
  // Routes are timed under their pattern, fixed when they are registered; /metrics itself is not timed.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, metricsTimer: route.url === METRICS_PATH ? null : timer(route.url) }
  })
  const unmatched = timer(UNMATCHED)
  const observe = (request: FastifyRequest, reply: FastifyReply) => {
    const own = request.routeOptions.config.metricsTimer
    if (own === null || UNTIMED.has(request.method)) return
    const route = own ?? unmatched
    const statuses = route.methods[request.method] ??= []
    const status = reply.statusCode
    const series = statuses[status] ??= durations.series({ method: request.method, route: route.route, status_code: status })
    durations.observe(series, reply.elapsedTime / 1000)
  }

  app.addHook('onRequest', (request, _reply, done) => {
    request.metricsOpen = true
    inFlight++
    done()
  })
  app.addHook('onResponse', (request, reply, done) => {
    end(request)
    observe(request, reply)
    done()
  })
  app.addHook('onRequestAbort', (request, done) => {
    end(request)
    done()
  })

  const ownPort = config.METRICS_PORT !== undefined
  const scrape = async (_request: FastifyRequest, reply: FastifyReply) => reply.type(registry.contentType).send(await registry.metrics())
  if (!ownPort) {
    // On the API's port the metrics are for the operator's scraper only: loopback and private addresses,
    // or anyone presenting METRICS_TOKEN; to everyone else the path does not exist (and costs nothing).
    const token = config.METRICS_TOKEN ? `Bearer ${config.METRICS_TOKEN}` : null
    const allowed = (request: FastifyRequest) => isPrivateAddress(request.ip) || (token !== null && request.headers.authorization === token)
    app.get(METRICS_PATH, {
      logLevel: 'warn',
      config: { rateLimit: false, loadShedding: false },
      schema: { hide: true },
      onRequest: (request, reply, done) => {
        if (allowed(request)) done()
        else reply.code(404).send(errorBody(404, `Route GET ${METRICS_PATH} not found`))
      }
    }, scrape)
  }

  if (ownPort) {
    const server = Fastify({ logger: false, genReqId, requestIdHeader: false })
    server.addHook('onRequest', (request, reply, done) => {
      reply.header(REQUEST_ID_HEADER, request.id)
      done()
    })
    server.get(METRICS_PATH, scrape)
    app.addHook('onReady', async () => {
      await server.listen({ port: config.METRICS_PORT, host: config.HOST })
      app.log.info({ port: config.METRICS_PORT }, 'metrics served on their own port')
    })
    app.addHook('onClose', async () => { await server.close() })
  }
}, { name: 'metrics', dependencies: ['config'] })
