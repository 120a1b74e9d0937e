import type { FastifyPluginAsync } from 'fastify'

/** `GET /` (and HEAD) leads a browser to the API docs. Not part of the API, so not in the OpenAPI document. */
const root: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/api/docs', 302))
}

export default root
