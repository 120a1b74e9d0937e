import fp from 'fastify-plugin'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import promClient, { Counter, Gauge, Registry } from 'prom-client'
import fastifyMetricsModule from 'fastify-metrics'
import requestId, { genReqId } from '../app/request-id.ts'

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
}

// A CommonJS module: its plugin is the `default` export of the module object.
const fastifyMetrics = fastifyMetricsModule.default

export const METRICS_PATH = '/metrics'
// Requests that match no route share this label, so that scanned URLs cannot add series.
const UNMATCHED = '__unmatched__'
const routeLabel = (request: FastifyRequest): string => request.routeOptions.url ?? UNMATCHED

/** The app's metrics, each in `registry`; the gauges read their values from the app when scraped. */
function appMetrics(app: FastifyInstance, registry: Registry): AppMetrics {
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
 * Prometheus metrics through fastify-metrics, in a registry of this app's own (several apps may share a
 * process): request durations by route pattern, method and status, in-flight requests, process and
 * event-loop metrics, and the app's own (appMetrics above). GET /metrics serves them on PORT, or with
 * METRICS_PORT on that port only, from a small server of its own. METRICS=false serves nothing and times
 * no route; the counters still exist and cost next to nothing.
 */
export default fp(async function metricsPlugin(app: FastifyInstance) {
  const { config } = app
  const registry = new Registry()
  app.decorate('appMetrics', appMetrics(app, registry))
  if (!config.METRICS) return

  // A request ends with its answer, or with its connection when the client goes away first (then
  // possibly both): each is counted out once.
  const open = new WeakSet<FastifyRequest>()
  let inFlight = 0
  const end = (request: FastifyRequest, done: () => void) => {
    if (open.delete(request)) inFlight--
    done()
  }
  new Gauge({ name: 'http_requests_in_flight', help: 'Requests received and not yet answered', registers: [registry], collect() { this.set(inFlight) } })
  app.addHook('onRequest', (request, _reply, done) => {
    open.add(request)
    inFlight++
    done()
  })
  app.addHook('onResponse', (request, _reply, done) => end(request, done))
  app.addHook('onRequestAbort', (request, done) => end(request, done))

  const ownPort = config.METRICS_PORT !== undefined
  await app.register(fastifyMetrics, {
    // The same prom-client as the app's own metrics, with this app's registry as its global one.
    promClient: { ...promClient, register: registry },
    endpoint: ownPort ? null : { url: METRICS_PATH, method: 'GET', logLevel: 'warn', config: { rateLimit: false, loadShedding: false }, schema: { hide: true }, handler: () => {} },
    defaultMetrics: { enabled: true, register: registry },
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      // Every request is timed, unmatched ones under one label (route patterns only, never raw URLs).
      registeredRoutesOnly: false,
      routeBlacklist: [METRICS_PATH],
      overrides: {
        labels: { getRouteLabel: routeLabel },
        histogram: { registers: [registry], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
        summary: { registers: [] }
      }
    }
  })

  if (ownPort) {
    const server = Fastify({ logger: false, genReqId, requestIdHeader: false })
    await server.register(requestId)
    server.get(METRICS_PATH, async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()))
    app.addHook('onReady', async () => {
      await server.listen({ port: config.METRICS_PORT, host: config.HOST })
      app.log.info({ port: config.METRICS_PORT }, 'metrics served on their own port')
    })
    app.addHook('onClose', async () => { await server.close() })
  }
}, { name: 'metrics', dependencies: ['config'] })
