import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    // Shared state for several instances; null when REDIS_URL is unset (state stays in the process).
    redis: Redis | null
  }
}

export default fp(async function redis (app: FastifyInstance) {
  const url = app.config.REDIS_URL
  if (!url) {
    app.decorate('redis', null)
    return
  }
  // ioredis is loaded only when it is used: a start without REDIS_URL does not pay for its modules.
  const { createRedis, watchRedis } = await import('../../lib/redis.ts')
  const client = createRedis(url, { commandTimeout: app.config.REDIS_COMMAND_TIMEOUT_MS })
  // A Redis that went silent is noticed within about a second and skipped until it is back.
  const unwatch = watchRedis(client, 1000, Math.min(app.config.REDIS_COMMAND_TIMEOUT_MS, 500))
  let healthy = true
  client.on('error', (err: Error) => {
    if (healthy) app.log.warn({ err: err.message }, 'redis unavailable: rate limits and sign-in blocks fall back to this instance until it returns')
    healthy = false
  })
  client.on('ready', () => {
    if (!healthy) app.log.info('redis is back: shared state restored')
    healthy = true
  })
  app.decorate('redis', client)
  app.addHook('onClose', async () => {
    unwatch()
    await client.quit().catch(() => client.disconnect())
  })
}, { name: 'redis', dependencies: ['config'] })
