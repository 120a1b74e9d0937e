import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import type { DatabaseHandle } from './handle.ts'

/**
 * Runs a request's query with PostgreSQL's JIT compilation off: `SET LOCAL`, in a transaction of its own,
 * so that it holds behind a transaction-pooling proxy too (a connection option would not get through one).
 * PostgreSQL keeps no statistics for the `box` type's `&&` and reckons a box holds 0.5 % of the table:
 * at 10M placemarks a tile's query is planned for 50,000 rows, passes `jit_above_cost`, and spent 60–110 ms
 * compiling what then ran in 40 (a zoom-12 tile's lines, `docs/performance.md`). PGlite has no JIT: there
 * the query runs as it is.
 */
export function withoutJit<T> (handle: Pick<DatabaseHandle, 'db' | 'kind'>, query: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  if (handle.kind !== 'postgres') return query(handle.db)
  return handle.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL jit = off`.execute(trx)
    return query(trx)
  })
}
