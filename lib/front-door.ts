import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyServerOptions } from 'fastify'

/** Hands a request on to Fastify's router. */
export type NextHandler = (req: IncomingMessage, res: ServerResponse) => void

/**
 * Sees each request before Fastify does: answers it (a cached answer) or passes it on with `next`,
 * now or later (after an asynchronous rate-limit count).
 */
export type FrontHandler = (req: IncomingMessage, res: ServerResponse, next: NextHandler) => void

/**
 * The HTTP server in front of Fastify's router. Without a handler every request goes straight to
 * Fastify; the response cache installs one so that a cached answer skips the router, the request and
 * reply objects and the hook chain: on a small cached body those cost more than the answer itself.
 */
export class FrontDoor {
  #handler: FrontHandler | null = null

  use(handler: FrontHandler): void {
    this.#handler = handler
  }

  /** Fastify's serverFactory: the server Fastify would make (same timeouts), with this door in front. */
  readonly serverFactory = (fastify: NextHandler, opts: FastifyServerOptions): Server => {
    const server = createServer((opts as { http?: ServerOptions }).http ?? {}, (req, res) => {
      const handler = this.#handler
      if (handler === null) {
        fastify(req, res)
        return
      }
      try {
        handler(req, res, fastify)
      } catch {
        // A fault in front of the router must not take the process down: Fastify answers instead.
        if (!res.headersSent) fastify(req, res)
      }
    })
    if (opts.keepAliveTimeout !== undefined) server.keepAliveTimeout = opts.keepAliveTimeout
    if (opts.requestTimeout !== undefined) server.requestTimeout = opts.requestTimeout
    server.setTimeout(opts.connectionTimeout ?? 0)
    if (opts.maxRequestsPerSocket) server.maxRequestsPerSocket = opts.maxRequestsPerSocket
    return server
  }
}

/**
 * The client address of a raw request under a trustProxy setting, as Fastify's `request.ip` gives it:
 * the socket's peer, or with trusted proxies the last untrusted address of X-Forwarded-For.
 */
export function clientAddressOf(trustProxy: FastifyServerOptions['trustProxy']): (req: IncomingMessage) => string | undefined {
  if (!trustProxy) return (req) => req.socket.remoteAddress
  const trust = typeof trustProxy === 'function'
    ? trustProxy
    : trustProxy === true
      ? () => true
      : typeof trustProxy === 'number'
        ? () => false
        : proxyAddr.compile(typeof trustProxy === 'string' ? trustProxy.split(',').map((s) => s.trim()) : trustProxy)
  return (req) => {
    const addresses = proxyAddr.all(req, trust)
    return addresses[addresses.length - 1]
  }
}

/** Request ids as Fastify's default makes them ("req-1", "req-2"…), shared by both ways in. */
export function requestIds(): () => string {
  let next = 0
  return () => {
    next = (next + 1) % 2147483647
    return `req-${next.toString(36)}`
  }
}
