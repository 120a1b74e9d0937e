import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    // Shared state for several instances; null when REDIS_URL is unset (state stays in the process).
    redis: Redis | null
  }
}

export function createRedis(url: string): Redis {
  // Fail fast instead of queueing while Redis is away, so requests keep being served without it.
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 1000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(attempt * 250, 2000)
  })
}

export default fp(async function redis(app: FastifyInstance) {
  const url = app.config.REDIS_URL
  if (!url) {
    app.decorate('redis', null)
    return
  }
  const client = createRedis(url)
  let healthy = true
  client.on('error', (err: Error) => {
    if (healthy) app.log.warn({ err: err.message }, 'redis unavailable: shared limits and revocation fan-out fall back to this instance until it returns')
    healthy = false
  })
  client.on('ready', () => {
    if (!healthy) app.log.info('redis is back: shared state restored')
    healthy = true
  })
  app.decorate('redis', client)
  app.addHook('onClose', async () => {
    await client.quit().catch(() => client.disconnect())
  })
}, { name: 'redis', dependencies: ['config'] })
