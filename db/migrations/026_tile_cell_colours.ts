import type { Kysely } from 'kysely'
import { CompiledQuery, sql } from '../kysely.ts'
import { fillTileCells, TILE_CELLS_INDEX, TILE_CELLS_TABLE, TILE_SHAPES_ZOOM_INDEX } from '../tile-cells.ts'

/**
 * The tiles' counted cells by colour rather than by style (db/tile-cells.ts): a cluster's colour is what
 * its tile needs, and many styles share one (a 20-style dataset of one colour read 20 rows a cell); and
 * counted at every cluster zoom (0–13; large shapes listed up to zoom 11, and indexed by zoom too).
 * Counted here from the placemarks already served, so that a database upgraded in place serves its
 * cluster zooms from them at once.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tile_cells`.execute(db)
  await sql.raw(TILE_CELLS_TABLE).execute(db)
  await sql.raw(TILE_CELLS_INDEX).execute(db)
  await sql.raw(TILE_SHAPES_ZOOM_INDEX).execute(db)
  await fillTileCells((text, values) => db.executeQuery(CompiledQuery.raw(text, values ?? [])), 'placemarks')
  await sql`ANALYZE tile_cells, tile_shapes`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM tile_shapes`.execute(db)
  await sql`DROP TABLE tile_cells`.execute(db)
  await sql`DROP INDEX tile_shapes_zoom_idx`.execute(db)
  await sql`CREATE TABLE tile_cells (
    z smallint NOT NULL, x int NOT NULL, y int NOT NULL, cx int NOT NULL, cy int NOT NULL, style_id text, geometry_type text NOT NULL,
    last_zoom smallint NOT NULL, n int NOT NULL, sum_x float8 NOT NULL, sum_y float8 NOT NULL, id int NOT NULL
  )`.execute(db)
  await sql`CREATE INDEX tile_cells_tile_idx ON tile_cells (z, x, y)`.execute(db)
}
