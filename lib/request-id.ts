import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

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
