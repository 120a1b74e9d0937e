import fp from 'fastify-plugin'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

declare module 'node:net' {
  interface Socket {
    // Armed with the first-request deadline until its first request arrives.
    awaitingFirstRequest?: boolean
    // Requests received on it and not yet answered.
    requestsInFlight?: number
  }
}

/**
 * Connection slots are shared by every client, so no one address may hold them all:
 * - at most MAX_CONNECTIONS_PER_ADDRESS open connections per client address (0: no cap), further ones
 *   closed as they arrive;
 * - a connection must send its first request within the headers timeout (at most 10 s), or it is closed:
 *   a slot never used is not held;
 * - when MAX_CONNECTIONS is reached, connections idle between requests are closed (their clients
 *   reconnect), so that a new client gets a slot rather than the idle ones keeping theirs for the whole
 *   keep-alive time.
 * And on close (SIGTERM), connections end as they fall idle: a connection with a request in progress, or
 * with answer bytes its client has not read yet, is left to finish; SHUTDOWN_GRACE_MS after the close
 * began, whatever is still open is cut, so that no number of slow clients can hold the process.
 */
export default fp(async function connections (app: FastifyInstance) {
  const { config } = app
  const server = app.server
  server.maxConnections = config.MAX_CONNECTIONS
  const cap = config.MAX_CONNECTIONS_PER_ADDRESS
  const firstRequestMs = Math.min(10_000, config.REQUEST_TIMEOUT_MS)
  const open = new Map<string, number>()
  const sockets = new Set<Socket>()
  const onConnection = (socket: Socket) => {
    const address = socket.remoteAddress ?? ''
    const count = (open.get(address) ?? 0) + 1
    if (cap > 0 && count > cap) {
      socket.destroy()
      return
    }
    open.set(address, count)
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      const left = (open.get(address) ?? 1) - 1
      if (left > 0) open.set(address, left)
      else open.delete(address)
    })
    // Node's own timeout handling closes the socket when this fires (the server has no other listener).
    socket.awaitingFirstRequest = true
    socket.setTimeout(firstRequestMs)
  }
  let lastEviction = 0
  const onDrop = () => {
    const now = Date.now()
    if (now - lastEviction < 100) return
    lastEviction = now
    server.closeIdleConnections()
  }
  server.on('connection', onConnection)
  server.on('drop', onDrop)
  app.addHook('onRequest', (request, _reply, done) => {
    const socket = request.raw.socket
    if (socket) {
      socket.requestsInFlight = (socket.requestsInFlight ?? 0) + 1
      if (socket.awaitingFirstRequest) {
        socket.awaitingFirstRequest = false
        socket.setTimeout(0)
      }
    }
    done()
  })
  const ended = (socket: Socket | undefined) => {
    if (socket) socket.requestsInFlight = (socket.requestsInFlight ?? 1) - 1
  }
  app.addHook('onResponse', (request, _reply, done) => {
    ended(request.raw.socket)
    done()
  })
  app.addHook('onRequestAbort', (request, done) => {
    ended(request.raw.socket)
    done()
  })

  // Before the server closes (Node's close() ends every connection whose answer has been handed over,
  // sent or not), answers in progress are let through: connections end as they fall idle, and the close
  // goes on once none has a request in progress, or SHUTDOWN_GRACE_MS after it began (then whatever is
  // still open is cut).
  let drain: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    const deadline = Date.now() + config.SHUTDOWN_GRACE_MS
    await new Promise<void>((resolve) => {
      const sweep = () => {
        let busy = false
        for (const socket of sockets) {
          if (socket.requestsInFlight) busy = true
          else if (socket.writableLength === 0) socket.destroy()
        }
        if (!busy || Date.now() >= deadline) {
          clearInterval(drain)
          if (busy) server.closeAllConnections()
          resolve()
        }
      }
      drain = setInterval(sweep, 50)
      sweep()
    })
  })
  app.addHook('onClose', async () => {
    clearInterval(drain)
    server.off('connection', onConnection)
    server.off('drop', onDrop)
  })
}, { name: 'connections', dependencies: ['config'] })
