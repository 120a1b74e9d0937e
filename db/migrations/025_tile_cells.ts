import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'
import { TILE_CELLS_INDEXES, TILE_CELLS_TABLE, TILE_SHAPES_TABLE, tileCellStatements } from '../tile-cells.ts'

/**
 * The vector tiles' low zooms counted once per dataset version (db/tile-cells.ts): each import replaces
 * the rows in its transaction. Counted here from the placemarks already served (5–7 s at 1M
 * placemarks), so that a database upgraded in place serves its low zooms from them at once.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql.raw(TILE_CELLS_TABLE).execute(db)
  await sql.raw(TILE_SHAPES_TABLE).execute(db)
  for (const statement of tileCellStatements('placemarks')) await sql.raw(statement).execute(db)
  for (const statement of TILE_CELLS_INDEXES) await sql.raw(statement).execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tile_cells, tile_shapes`.execute(db)
}
