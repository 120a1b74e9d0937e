import pg from 'pg'
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
  close(): Promise<void>
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
    return { db, pool, kind: 'postgres', close: () => db.destroy() }
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
  return {
    db,
    pool,
    kind: 'pglite',
    close: async () => {
      await db.destroy()
      await pglite.close()
    }
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
