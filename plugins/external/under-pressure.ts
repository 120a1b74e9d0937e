import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { getHeapStatistics } from 'node:v8'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { HttpError } from '../../lib/errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    // false: the route is answered even while the instance sheds load (health checks, metrics).
    loadShedding?: boolean
  }
  interface FastifyInstance {
    /** Past a load-shedding threshold now (never during the start-up's own work). */
    overloaded(): boolean
  }
}

// How often the event-loop delay and the heap are sampled, and how long a refused client should wait.
const SAMPLE_INTERVAL_MS = 1000
export const RETRY_AFTER_SECONDS = 5

/** MAX_HEAP_USED_BYTES, or unset 90 % of the V8 heap limit; 0 is off. */
export function heapLimit (setting: number | undefined): number {
  return setting ?? Math.floor(getHeapStatistics().heap_size_limit * 0.9)
}

const causes: Record<string, string> = {
  eventLoopDelay: 'event-loop-delay',
  heapUsedBytes: 'heap',
  rssBytes: 'rss',
  eventLoopUtilization: 'event-loop-utilization',
  healthCheck: 'health-check'
}

/**
 * Load shedding through @fastify/under-pressure: while the mean event-loop delay passes
 * MAX_EVENT_LOOP_DELAY_MS or the V8 heap passes MAX_HEAP_USED_BYTES (sampled every second), new
 * requests are answered 503 {error, message} with retry-after, before any work is done for them;
 * routes whose config says `loadShedding: false` (health checks, metrics) are still answered.
 * `app.overloaded()` tells the readiness check.
 */
export default fp(async function underPressurePlugin (app: FastifyInstance) {
  const { config } = app
  // Start-up (migrations, the embedded database's first seed) holds the event loop by design; shedding
  // begins with the first sample taken wholly after the server is ready.
  let settled = false
  let settle: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => { settle = setTimeout(() => { settled = true }, 2 * SAMPLE_INTERVAL_MS).unref() })
  app.addHook('onClose', async () => clearTimeout(settle))
  app.decorate('overloaded', () => settled && app.isUnderPressure())
  await app.register(underPressure, {
    maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
    maxHeapUsedBytes: heapLimit(config.MAX_HEAP_USED_BYTES),
    sampleInterval: SAMPLE_INTERVAL_MS,
    // Only called while a threshold is passed; a rejection goes to the error handler as {error, message}.
    pressureHandler: async (request: FastifyRequest, _reply, type) => {
      if (!settled || request.routeOptions.config.loadShedding === false) return
      app.appMetrics.shed.inc({ reason: causes[type] ?? type })
      throw new HttpError(503, 'The server is overloaded; try again shortly', { 'retry-after': String(RETRY_AFTER_SECONDS) })
    }
  })
}, { name: 'under-pressure', dependencies: ['config', 'metrics', 'security-headers'] })
