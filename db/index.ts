import pg from 'pg'
import type { DatabaseHandle, DatabaseOptions } from './handle.ts'
import { openPostgres } from './postgres.ts'
import { openEmbedded } from './embedded.ts'

export type { DatabaseHandle, DatabaseOptions } from './handle.ts'
export { migrateDatabase, migrateToLatest } from './migrate.ts'
export { PGLITE_SHARED_BUFFERS_MB } from './embedded.ts'

// Dates stay 'YYYY-MM-DD' strings; int8 counts become numbers (they stay far below 2^53 here).
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v)
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v))

/** PostgreSQL when a URL is given, otherwise the embedded database in `pgliteDir`. */
export async function openDatabase (options: DatabaseOptions): Promise<DatabaseHandle> {
  return options.url ? openPostgres({ ...options, url: options.url }) : openEmbedded(options)
}

/**
 * One round trip to the database, failing after timeoutMs without an answer (a network that drops
 * packets silently would otherwise hold it until TCP gives up). A connection that timed out is
 * discarded by the pool, not reused.
 */
export async function ping (handle: Pick<DatabaseHandle, 'pool'>, timeoutMs: number): Promise<void> {
  await handle.pool.query({ text: 'SELECT 1', query_timeout: timeoutMs } as pg.QueryConfig)
}
