import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { pruneAudit, pruneAuthRecords } from '../../db/auth.ts'
import { pruneChanges } from '../../db/changes.ts'

const EVERY_MS = 3_600_000
// The change log is the bus's fallback for a listener that was away; an hour covers any outage it rides out.
const CHANGE_LOG_MS = 3_600_000

/**
 * The retention rule of the auth tables, run by every instance at start and then hourly (the deletes
 * are idempotent, so instances running it at once do no harm): sessions that ended more than
 * SESSION_RETENTION ago go, with their refresh-token records, and so do refresh-token records expired
 * that long; the security history keeps AUDIT_RETENTION; the change bus's log keeps an hour.
 */
export default fp(async function retention (app: FastifyInstance) {
  const run = async () => {
    try {
      const deleted = await pruneAuthRecords(app.db, app.sessionPolicy.retentionMs)
      if (deleted.sessions || deleted.refreshTokens) app.log.info(deleted, 'retention: ended sessions and expired refresh tokens deleted')
      const events = await pruneAudit(app.db, app.sessionPolicy.auditRetentionMs)
      if (events) app.log.info({ events }, 'retention: security history past AUDIT_RETENTION deleted')
      await pruneChanges(app.db, CHANGE_LOG_MS)
    } catch (err) {
      app.log.warn({ err }, 'retention run failed; retried within the hour')
    }
  }
  // The run under way, if any: awaited on close (so that no delete meets a closed pool) and by idle().
  let running: Promise<void> = Promise.resolve()
  const start = () => { running = running.then(run) }
  let timer: NodeJS.Timeout | undefined
  app.decorate('retention', { idle: () => running })
  app.addHook('onReady', async () => {
    start()
    timer = setInterval(start, EVERY_MS).unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await running
  })
}, { name: 'retention', dependencies: ['db', 'auth'] })

declare module 'fastify' {
  interface FastifyInstance {
    /** The retention rule's runs (at start, then hourly): idle() settles when the current one has. */
    retention: { idle(): Promise<void> }
  }
}
