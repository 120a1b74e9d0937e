import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'

/**
 * Graceful shutdown with an end: closing stops new connections and lets in-flight requests finish
 * (idle keep-alive connections are closed at once by forceCloseConnections: 'idle'), but connections
 * still busy SHUTDOWN_GRACE_MS later (a body trickling in, a client that never reads) are cut, so
 * that no number of slow clients can hold the process open.
 */
export default fp(async function shutdown (app: FastifyInstance) {
  let timer: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    timer = setTimeout(() => app.server.closeAllConnections(), app.config.SHUTDOWN_GRACE_MS)
    timer.unref()
  })
  app.addHook('onClose', async () => { clearTimeout(timer) })
}, { name: 'shutdown', dependencies: ['config'] })
