import pg from 'pg'
import { Kysely, PostgresDialect } from './kysely.ts'
import type { Database } from './types.ts'
import { once, type DatabaseHandle, type DatabaseOptions } from './handle.ts'
import { listenerRegistry, listenPostgres } from './listen.ts'

/** PostgreSQL through a pg pool: the server's connections, and the listener's own connection. */
export function openPostgres (options: DatabaseOptions & { url: string }): DatabaseHandle {
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
  const listenConfig: pg.ClientConfig = { connectionString: options.listenUrl ?? options.url, connectionTimeoutMillis: options.connectionTimeoutMillis ?? 3000 }
  return {
    db,
    pool,
    kind: 'postgres',
    url: options.url,
    listen: (channel, onNotify, onError) => listeners.add(() => listenPostgres(listenConfig, channel, onNotify, onError)),
    close: once(async () => {
      await listeners.stopAll()
      await db.destroy()
      // Kysely ends the pool only once it has run a query through it; a command that used the pool's own
      // clients (the import's lanes) would otherwise wait out their idle timers (30 s) before it exits.
      if (!pool.ending) await pool.end()
    })
  }
}
