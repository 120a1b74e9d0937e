import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyServerOptions } from 'fastify'

/** Hands a request on to Fastify's router. */
export type NextHandler = (req: IncomingMessage, res: ServerResponse) => void

/**
 * Sees a request before Fastify does: answers it (a cached answer, a signed-in user's profile) or passes it on with `next`,
 * now or later (after an asynchronous rate-limit count).
 */
export type FrontHandler = (req: IncomingMessage, res: ServerResponse, next: NextHandler) => void

/**
 * The HTTP server in front of Fastify's router. Handlers are found by the request's exact URL (the
 * path and query string as sent), else the one for every other URL; without one a request goes
 * straight to Fastify. An answer given here skips the router, the request and reply objects and the
 * hook chain: on a small body those cost more than the answer itself. Once the server closes, every
 * request goes to Fastify, which refuses it.
 */
export class FrontDoor {
  #fallback: FrontHandler | null = null
  readonly #exact = new Map<string, FrontHandler>()
  #closing = false

  /** The handler of every URL that has none of its own. */
  use(handler: FrontHandler): void {
    this.#fallback = handler
  }

  /** The handler of one exact URL. */
  at(url: string, handler: FrontHandler): void {
    this.#exact.set(url, handler)
  }

  close(): void {
    this.#closing = true
  }

  /** Fastify's serverFactory: the server Fastify would make (same timeouts), with this door in front. */
  readonly serverFactory = (fastify: NextHandler, opts: FastifyServerOptions): Server => {
    const server = createServer((opts as { http?: ServerOptions }).http ?? {}, (req, res) => {
      const handler = this.#closing ? null : this.#exact.get(req.url ?? '') ?? this.#fallback
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
