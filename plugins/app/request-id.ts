import fp from 'fastify-plugin'
import { REQUEST_ID_HEADER } from '../../lib/request-id.ts'
import type { FastifyInstance } from 'fastify'

// Registered by app.ts before any other plugin, so that answers sent from any hook (a shed 503) carry the id.
export const autoload = false

/**
 * Every answer carries its request's id, as the logs do (reqId): errors, 404s, 429s and 503s included.
 * Set as the request arrives (a header set then stays on whatever answer follows), so that answers
 * need no onSend hook, whose runner every reply would otherwise go through.
 */
export default fp(async function requestId (app: FastifyInstance) {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })
}, { name: 'request-id' })
