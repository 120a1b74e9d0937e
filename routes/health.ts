import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ping } from '../db/index.ts'

const Health = Type.Object({ status: Type.String({ examples: ['ok'] }) })

const health: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', {
    // Load balancers poll it: never rate limited.
    config: { rateLimit: false },
    schema: {
      tags: ['Health'],
      summary: 'Health check',
      description: '`{"status":"ok"}` when the database answers; 503 with `{"status":"unavailable"}` when it does not.',
      response: { 200: Health, 503: Health }
    }
  }, async (request, reply) => {
    try {
      await ping(app.dbHandle, app.config.DB_CONNECTION_TIMEOUT_MS)
      return { status: 'ok' }
    } catch (err) {
      request.log.warn({ code: (err as { code?: string }).code }, 'health check: database did not answer')
      return reply.code(503).send({ status: 'unavailable' })
    }
  })
}

export default health
