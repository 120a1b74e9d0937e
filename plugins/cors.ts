import fp from 'fastify-plugin'
import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'

const localOrigin = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

export function allowedOrigins(setting: string | undefined): (string | RegExp)[] {
  if (!setting || !setting.trim()) return [localOrigin]
  return setting.split(',').map((o) => o.trim()).filter(Boolean)
}

export default fp(async function corsPlugin(app: FastifyInstance) {
  await app.register(cors, {
    origin: allowedOrigins(app.config.CORS_ORIGINS),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
    exposedHeaders: ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'etag']
  })
}, { name: 'cors', dependencies: ['config'] })
