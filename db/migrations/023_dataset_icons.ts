import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The images a KMZ holds beside its KML (the icons its styles point to, `images/icon-1.png`), kept at their
 * paths in the archive: replaced by each import in its transaction, so they are always the served dataset
 * version's. Bounded by the import (lib/kml/source.ts KMZ_ICON_LIMITS: 500 files, 1 MiB each, 32 MiB in
 * all); served by `GET /api/v1/icons/{name}` and written back into `export.kmz`.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE dataset_icons (
    name text COLLATE "C" PRIMARY KEY,
    content_type text NOT NULL,
    data bytea NOT NULL
  )`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE dataset_icons`.execute(db)
}
