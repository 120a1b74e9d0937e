import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The vector tiles' low zooms counted once per dataset version (db/tile-cells.ts): the tables as they
 * were first defined. Migration 026 replaces tile_cells (counted by colour rather than by style) and
 * counts both tables; a database that ran this one when it counted them is counted again there.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE tile_cells (
    z smallint NOT NULL,
    x int NOT NULL,
    y int NOT NULL,
    cx int NOT NULL,
    cy int NOT NULL,
    style_id text,
    geometry_type text NOT NULL,
    last_zoom smallint NOT NULL,
    n int NOT NULL,
    sum_x float8 NOT NULL,
    sum_y float8 NOT NULL,
    id int NOT NULL
  )`.execute(db)
  await sql`CREATE TABLE tile_shapes (
    id int PRIMARY KEY,
    last_zoom smallint NOT NULL,
    bbox box NOT NULL
  )`.execute(db)
  await sql`CREATE INDEX tile_cells_tile_idx ON tile_cells (z, x, y)`.execute(db)
  await sql`CREATE INDEX tile_shapes_bbox_idx ON tile_shapes USING gist (bbox)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE tile_cells, tile_shapes`.execute(db)
}
