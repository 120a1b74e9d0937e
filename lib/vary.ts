import type { FastifyReply } from 'fastify'

/** Adds a token to the answer's Vary header, keeping what is there (CORS's Origin, the cache's accept-encoding). */
export function addVary (reply: FastifyReply, token: string): void {
  const current = reply.getHeader('vary')
  reply.header('vary', current ? `${String(current)}, ${token}` : token)
}
