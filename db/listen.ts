import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import type { Unsubscribe } from './handle.ts'

// Reconnect delays of a lost listening connection: doubling from the first to the cap.
const LISTEN_RETRY_FIRST_MS = 250
const LISTEN_RETRY_MAX_MS = 5000

/** Open listeners of one handle, so that closing the handle stops them. */
export function listenerRegistry () {
  const open = new Set<Unsubscribe>()
  let closed = false
  const refuse = () => new Error('the database handle is closed')
  return {
    async add (subscribe: () => Promise<Unsubscribe>): Promise<Unsubscribe> {
      if (closed) throw refuse()
      const stop = await subscribe()
      // A listen that raced the close must not outlive it.
      if (closed) {
        await stop()
        throw refuse()
      }
      let stopped = false
      const unsubscribe = async () => {
        if (stopped) return
        stopped = true
        open.delete(unsubscribe)
        await stop()
      }
      open.add(unsubscribe)
      return unsubscribe
    },
    async stopAll (): Promise<void> {
      closed = true
      await Promise.all([...open].map((stop) => stop()))
    }
  }
}

// A listener's callbacks run inside connection events: a throw there must not escape into the driver.
function guarded (onNotify: (payload: string) => void, onError?: (err: unknown) => void) {
  const report = (err: unknown) => {
    try { onError?.(err) } catch { /* the reporter's own failure has nowhere to go */ }
  }
  const deliver = (payload: string) => {
    try { onNotify(payload) } catch (err) { report(err) }
  }
  return { deliver, report }
}

/**
 * PostgreSQL: a connection of its own (a pooled one would be held for good), kept alive by TCP
 * keepalive and re-established with a capped backoff whenever it fails or ends.
 */
export async function listenPostgres (config: pg.ClientConfig, channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<Unsubscribe> {
  const { deliver, report } = guarded(onNotify, onError)
  // The connection of the latest attempt, and whether its handshake has finished.
  let current: { client: pg.Client; connected: boolean } | null = null
  let timer: NodeJS.Timeout | null = null
  let stopped = false
  let delay = LISTEN_RETRY_FIRST_MS
  let missed = false
  let attempting: Promise<void> = Promise.resolve()

  const retryLater = () => {
    if (stopped || timer) return
    timer = setTimeout(() => { timer = null; attempting = attempt() }, delay)
    // A listener waiting to reconnect does not by itself keep the process running.
    timer.unref()
    delay = Math.min(delay * 2, LISTEN_RETRY_MAX_MS)
  }

  const attempt = async (): Promise<void> => {
    const c = new pg.Client({ ...config, keepAlive: true })
    const state = { client: c, connected: false }
    current = state
    let lost = false
    const onLost = (err?: unknown) => {
      if (lost) return
      lost = true
      missed = true
      if (err !== undefined && !stopped) report(err)
      if (current === state) current = null
      c.end().catch(() => {})
      retryLater()
    }
    // Without an 'error' handler a dropped connection would crash the process.
    c.on('error', onLost)
    c.on('end', () => onLost())
    c.on('notification', (msg) => { if (msg.channel === channel) deliver(msg.payload ?? '') })
    try {
      await c.connect()
      state.connected = true
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    } catch (err) {
      onLost(err)
      return
    }
    if (lost) return
    // Stopped during the LISTEN: the stop ended the connection and the query failed; if the query
    // won the race the connection is ended here.
    if (stopped) {
      await c.end().catch(() => {})
      return
    }
    delay = LISTEN_RETRY_FIRST_MS
    if (missed) {
      missed = false
      deliver('')
    }
  }

  // A first attempt that fails is reported and retried like a lost connection.
  attempting = attempt()
  await attempting
  return async () => {
    stopped = true
    if (timer) clearTimeout(timer)
    timer = null
    const state = current
    current = null
    if (state?.connected) await state.client.end().catch(() => {})
    // Still connecting: pg's end() would leave connect() unsettled for good, so the socket is cut
    // instead, which fails the connect and lets the attempt finish.
    else state?.client.connection.stream.destroy()
    await attempting
  }
}

/**
 * PGlite: one backend shared with the pool, so LISTEN and UNLISTEN go through the pool and wait their
 * turn (run beside it they could land inside an open transaction); notifications arrive through PGlite.
 */
export function pgliteListener (pglite: PGlite, pool: pg.Pool) {
  // Listeners per channel: the backend stops listening only when the last one goes.
  const counts = new Map<string, number>()
  return async (channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<Unsubscribe> => {
    const { deliver, report } = guarded(onNotify, onError)
    const ident = pg.escapeIdentifier(channel)
    counts.set(channel, (counts.get(channel) ?? 0) + 1)
    const off = pglite.onNotification((ch, payload) => { if (ch === channel) deliver(payload) })
    const release = async () => {
      off()
      const left = (counts.get(channel) ?? 1) - 1
      if (left > 0) {
        counts.set(channel, left)
        return
      }
      counts.delete(channel)
      await pool.query(`UNLISTEN ${ident}`)
    }
    try {
      await pool.query(`LISTEN ${ident}`)
    } catch (err) {
      await release().catch(() => {})
      throw err
    }
    return () => release().catch(report)
  }
}
