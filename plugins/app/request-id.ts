import fp from 'fastify-plugin'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

// Registered by app.ts before any other plugin, so that answers sent from any hook (a shed 503) carry the id.
export const autoload = false

export const REQUEST_ID_HEADER = 'x-request-id'
// What an incoming id may be: 1 to 128 characters out of letters, digits and - _ . : + / = @.
const SAFE_ID = /^[\w.:+/=@-]{1,128}$/

/**
 * The request id (Fastify's genReqId): the caller's x-request-id when it is short and made of safe
 * characters (a proxy or another instance started the trace), otherwise a new UUID. Two x-request-id
 * headers arrive joined by ", " and are replaced too.
 */
export function genReqId (raw: IncomingMessage): string {
  const incoming = raw.headers[REQUEST_ID_HEADER]
  return typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID()
}

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
