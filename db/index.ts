import pg from 'pg'
import { existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { Kysely, Migrator, PostgresDialect } from 'kysely'
import type { Database } from './types.ts'
import { migrations } from './migrations/index.ts'
import { acquireEmbeddedLock, LOCK_FILE, type EmbeddedLock, type OwnerRecord } from './embedded-lock.ts'

// Dates stay 'YYYY-MM-DD' strings; int8 counts become numbers (they stay far below 2^53 here).
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v)
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v))

export interface DatabaseOptions {
  url?: string
  pgliteDir?: string
  poolMax?: number
  connectionTimeoutMillis?: number
  statementTimeoutMillis?: number
  // Client-side bound on waiting for a query's answer (packets dropped silently); 0 or unset: none.
  queryTimeoutMillis?: number
  // Embedded database: who this process is, as other processes refused the directory are told
  // ('the server', 'the command scripts/import.ts'); by default the script's name.
  owner?: string
  // Embedded database: called when the directory's lock was left by a process that is gone and is taken over.
  onStaleLock?: (previous: OwnerRecord) => void
  // Embedded database: PostgreSQL's shared_buffers in MB (PGlite's own default is 128).
  pgliteSharedBuffersMb?: number
  // Embedded database in memory: start from this copy of a data directory (see dumpDataDir) instead of
  // creating a new cluster, which takes seconds.
  pgliteDataDir?: Blob
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
  // Embedded database: a copy of its data directory, to start other in-memory databases from.
  dumpDataDir?: () => Promise<Blob>
  close(): Promise<void>
}

type Unsubscribe = () => Promise<void>

// Closing twice (a shutdown path and a teardown, say) waits for the one close rather than failing.
function once (fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null
  return () => (done ??= fn())
}

// Reconnect delays of a lost listening connection: doubling from the first to the cap.
const LISTEN_RETRY_FIRST_MS = 250
const LISTEN_RETRY_MAX_MS = 5000

/** Open listeners of one handle, so that closing the handle stops them. */
function listenerRegistry () {
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
async function listenPostgres (config: pg.ClientConfig, channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<Unsubscribe> {
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
function pgliteListener (pglite: PGlite, pool: pg.Pool) {
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

export async function openDatabase (options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolMax ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMillis ?? 3000,
      statement_timeout: options.statementTimeoutMillis || undefined,
      query_timeout: options.queryTimeoutMillis || undefined,
      // A peer gone without a word (a dropped network) is noticed by TCP keepalive, not never.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
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
  const startParams = pgliteStartParams(PGlite.defaultStartParams, options.pgliteSharedBuffersMb ?? PGLITE_SHARED_BUFFERS_MB)
  let lock: EmbeddedLock | null = null
  let pglite: PGlite
  try {
    if (!dir.startsWith('memory://')) {
      const { mkdir } = await import('node:fs/promises')
      await mkdir(dir, { recursive: true })
      // Before anything else in the directory is read or written: another live owner is refused here.
      lock = acquireEmbeddedLock(dir, options.owner ?? defaultOwner())
      if (lock.tookOverFrom) options.onStaleLock?.(lock.tookOverFrom)
      if (!existsSync(join(dir, 'PG_VERSION'))) await createEmbedded(dir, startParams)
    }
    pglite = await PGlite.create(dir, { startParams, ...(dir.startsWith('memory://') && options.pgliteDataDir ? { loadDataDir: options.pgliteDataDir } : {}) })
  } catch (err) {
    lock?.release()
    throw err
  }
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
    dumpDataDir: () => pglite.dumpDataDir('none'),
    close: once(async () => {
      await listeners.stopAll()
      await db.destroy()
      try {
        await pglite.close()
      } finally {
        lock?.release()
      }
    })
  }
}

// PGlite's default shared_buffers (128 MB) is most of an idle server's memory; the datasets served here
// fit in a fraction of it, and PostgreSQL reads the rest through the operating system's cache.
export const PGLITE_SHARED_BUFFERS_MB = 16

function pgliteStartParams (defaults: string[], sharedBuffersMb: number): string[] {
  return [...defaults, '-c', `shared_buffers=${sharedBuffersMb}MB`]
}

// 'the command scripts/import.ts' for a CLI, 'the process node …' for anything else.
function defaultOwner (): string {
  const script = process.argv[1]
  if (!script) return `the process ${process.argv0}`
  const rel = relative(process.cwd(), script)
  return `the command ${rel.startsWith('..') ? script : rel}`
}

// Where a new embedded database is built before its files are moved into the directory.
const STAGING = '.initialising'

/**
 * A new embedded database is created in a short-lived child process: PGlite's initdb runs in a second,
 * throw-away PostgreSQL instance whose few hundred MB of WebAssembly memory would otherwise stay with
 * this process (they are garbage only a rare full collection returns). The child runs under this
 * process's lock and ends when this process does (its stdin closes). It builds the database in a
 * staging folder whose files are then moved into the directory, PG_VERSION last: a first start that
 * is interrupted leaves no half-made database that would later be taken for a whole one.
 */
async function createEmbedded (dir: string, startParams: string[]): Promise<void> {
  const { readdir, rename, rm } = await import('node:fs/promises')
  const staging = join(dir, STAGING)
  await rm(staging, { recursive: true, force: true })
  const foreign = (await readdir(dir)).filter((name) => name !== LOCK_FILE && name !== STAGING)
  if (foreign.length) {
    throw new Error('the directory holds files but no database (no PG_VERSION; an interrupted first start?): empty it, or set PGLITE_DIR to a new directory')
  }
  await initdbInChild(staging, startParams)
  const names = (await readdir(staging)).sort((a, b) => Number(a === 'PG_VERSION') - Number(b === 'PG_VERSION'))
  for (const name of names) await rename(join(staging, name), join(dir, name))
  await rm(staging, { recursive: true, force: true })
}

async function initdbInChild (dir: string, startParams: string[]): Promise<void> {
  const { spawn } = await import('node:child_process')
  const code = [
    'const [url, dir, startParams] = JSON.parse(process.argv[1])',
    "process.stdin.on('end', () => process.exit(1)).resume()",
    'const { PGlite } = await import(url)',
    'const pg = await PGlite.create(dir, { startParams })',
    'await pg.close()',
    'process.exit(0)'
  ].join('\n')
  const args = JSON.stringify([import.meta.resolve('@electric-sql/pglite'), dir, startParams])
  const child = spawn(process.execPath, ['--input-type=module', '-e', code, args], { stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr = (stderr + d).slice(-4000) })
  const exit = await new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(err.message))
    child.once('close', (status, signal) => resolve(status ?? signal ?? 1))
  })
  child.stdin.destroy()
  if (exit === 0) return
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('at '))
  const cause = lines.find((l) => /error/i.test(l)) ?? lines.at(-1) ?? `exit ${exit}`
  throw new Error(`initdb failed: ${cause}`)
}

export async function migrateToLatest (db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/**
 * One round trip to the database, failing after timeoutMs without an answer (a network that drops
 * packets silently would otherwise hold it until TCP gives up). A connection that timed out is
 * discarded by the pool, not reused.
 */
export async function ping (handle: Pick<DatabaseHandle, 'pool'>, timeoutMs: number): Promise<void> {
  await handle.pool.query({ text: 'SELECT 1', query_timeout: timeoutMs } as pg.QueryConfig)
}
