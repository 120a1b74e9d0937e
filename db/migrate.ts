import pg from 'pg'
import type { Kysely } from 'kysely'
import { Kysely as KyselyDb, Migrator, PostgresDialect } from './kysely.ts'
import type { Database } from './types.ts'
import type { DatabaseHandle } from './handle.ts'
import { migrations } from './migrations/index.ts'

export async function migrateToLatest (db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

/**
 * Brings a database to the latest schema. On PostgreSQL the migrations run on a connection of their own,
 * without the pool's statement and query timeouts (DB_STATEMENT_TIMEOUT_MS, DB_QUERY_TIMEOUT_MS): those
 * bound a request, while a migration that fills a rollup from a large table takes as long as the table
 * needs (migration 024 reads every member day: some 20 s at ten million events).
 */
export async function migrateDatabase (handle: DatabaseHandle): Promise<string[]> {
  if (handle.kind !== 'postgres' || handle.url === undefined) return migrateToLatest(handle.db)
  const db = new KyselyDb<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: handle.url, max: 1, connectionTimeoutMillis: 10_000 }) }) })
  try {
    return await migrateToLatest(db)
  } finally {
    await db.destroy()
  }
}
