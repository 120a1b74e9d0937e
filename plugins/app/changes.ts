import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { changesSince, CHANGES_CHANNEL, databaseNow, parseChange, type Change, type ChangeKind } from '../../db/changes.ts'

declare module 'fastify' {
  interface FastifyInstance {
    changes: {
      /** Calls handler with the key of each change of this kind, from any instance or command. A change may come twice; handlers are idempotent. */
      on(kind: ChangeKind, handler: (key: string) => void): void
    }
  }
}

// Each fallback read starts this much of the database's time before the settled read it starts from.
const OVERLAP_MS = 2000
// However long a transaction runs, a read looks back at most this far: what each poll reads again is bounded.
const MAX_LOOKBACK_MS = 5 * 60_000

/**
 * The change bus, one per instance: one listening connection on the `changes` channel, whose
 * notifications (sent by the writing transactions, see db/migrations/007_change_bus.ts) are applied at
 * once, and one fallback read of the change log every CHANGE_POLL_MS, and at once after the listening
 * connection was re-established (notifications may have been lost meanwhile).
 */
export default fp(async function changeBus (app: FastifyInstance) {
  const handlers = new Map<ChangeKind, ((key: string) => void)[]>()
  const deliver = (change: Change) => {
    for (const handler of handlers.get(change.kind) ?? []) {
      try {
        handler(change.key)
      } catch (err) {
        app.log.warn({ err, change }, 'a change handler failed')
      }
    }
  }
  let since = new Date((await databaseNow(app.db)).getTime() - OVERLAP_MS)
  // Read from the last settled read (every transaction running at it has ended), not the last read: a
  // change logged by a transaction that commits long after (a slow one, an operator's) is still read.
  let unsettled: { now: Date; next: bigint } | null = null
  let reading: Promise<void> | null = null
  const readLog = () => (reading ??= (async () => {
    try {
      const read = await changesSince(app.db, since)
      for (const change of read.changes) deliver(change)
      if (unsettled !== null && unsettled.next <= read.oldest) {
        since = new Date(unsettled.now.getTime() - OVERLAP_MS)
        unsettled = null
      }
      unsettled ??= { now: read.now, next: read.next }
      since = new Date(Math.max(since.getTime(), read.now.getTime() - MAX_LOOKBACK_MS))
    } catch (err) {
      app.log.debug({ err }, 'reading the change log failed; retried at the next poll')
    } finally {
      reading = null
    }
  })())

  const stop = await app.dbHandle.listen(CHANGES_CHANNEL, (payload) => {
    // '' : the listening connection was re-established, and notifications may have been lost.
    if (payload === '') {
      void readLog()
      return
    }
    const change = parseChange(payload)
    if (change) deliver(change)
  }, (err) => app.log.debug({ err }, 'the change listener lost its connection; reconnecting'))
  const timer = setInterval(() => { void readLog() }, app.config.CHANGE_POLL_MS).unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await stop()
    await reading
  })

  app.decorate('changes', {
    on (kind: ChangeKind, handler: (key: string) => void) {
      const list = handlers.get(kind)
      if (list) list.push(handler)
      else handlers.set(kind, [handler])
    }
  })
}, { name: 'changes', dependencies: ['config', 'db'] })
