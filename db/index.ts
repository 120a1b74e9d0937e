import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely'
import type { Database } from './types.ts'
import { migrations } from './migrations/index.ts'

// Dates stay 'YYYY-MM-DD' strings; int8 counts become numbers (they stay far below 2^53 here).
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v)
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v))

export interface DatabaseOptions {
  url?: string
  pgliteDir?: string
  poolMax?: number
  connectionTimeoutMillis?: number
  statementTimeoutMillis?: number
}

export interface DatabaseHandle {
  db: Kysely<Database>
  pool: pg.Pool
  kind: 'postgres' | 'pglite'
  /**
   * Calls onNotify with the payload of each NOTIFY on the channel, and with '' when notifications may
   * have been lost (the listening connection was re-established). Errors go to onError, never thrown.
   * Resolves, once listening, to a function that stops it; close() stops every listener still open.
   */
  listen(channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

type Unsubscribe = () => Promise<void>

// Closing twice (a shutdown path and a teardown, say) waits for the one close rather than failing.
function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null
  return () => (done ??= fn())
}

// Reconnect delays of a lost listening connection: doubling from the first to the cap.
const LISTEN_RETRY_FIRST_MS = 250
const LISTEN_RETRY_MAX_MS = 5000

/** Open listeners of one handle, so that closing the handle stops them. */
function listenerRegistry() {
  const open = new Set<Unsubscribe>()
  let closed = false
  const refuse = () => new Error('the database handle is closed')
  return {
    async add(subscribe: () => Promise<Unsubscribe>): Promise<Unsubscribe> {
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
    async stopAll(): Promise<void> {
      closed = true
      await Promise.all([...open].map((stop) => stop()))
    }
  }
}

// A listener's callbacks run inside connection events: a throw there must not escape into the driver.
function guarded(onNotify: (payload: string) => void, onError?: (err: unknown) => void) {
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
async function listenPostgres(config: pg.ClientConfig, channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<Unsubscribe> {
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
function pgliteListener(pglite: PGlite, pool: pg.Pool) {
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

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolMax ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMillis ?? 3000,
      statement_timeout: options.statementTimeoutMillis || undefined,
      idleTimeoutMillis: 30_000
    })
    // A connection dropped by the server while idle must not crash the process; the pool replaces it.
    pool.on('error', () => {})
    // The same for a connection dropped between queries while checked out; the next query reports it.
    pool.on('connect', (client) => { client.on('error', () => {}) })
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    const listeners = listenerRegistry()
    const listenConfig: pg.ClientConfig = { connectionString: options.url, connectionTimeoutMillis: options.connectionTimeoutMillis ?? 3000 }
    return {
      db,
      pool,
      kind: 'postgres',
      listen: (channel, onNotify, onError) => listeners.add(() => listenPostgres(listenConfig, channel, onNotify, onError)),
      close: once(async () => {
        await listeners.stopAll()
        await db.destroy()
      })
    }
  }
  const { PGlite } = await import('@electric-sql/pglite')
  const { createPgConfig } = await import('@electric-sql/pglite/node-postgres')
  const dir = options.pgliteDir ?? './data/pglite'
  if (!dir.startsWith('memory://')) {
    const { mkdir } = await import('node:fs/promises')
    await mkdir(dir, { recursive: true })
  }
  const pglite = await PGlite.create(dir)
  // PGlite is one connection; the pool keeps that single client open for good.
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 } as pg.PoolConfig)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  const listeners = listenerRegistry()
  const listen = pgliteListener(pglite, pool)
  return {
    db,
    pool,
    kind: 'pglite',
    listen: (channel, onNotify, onError) => listeners.add(() => listen(channel, onNotify, onError)),
    close: once(async () => {
      await listeners.stopAll()
      await db.destroy()
      await pglite.close()
    })
  }
}

export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`SELECT 1`.execute(db)
}
