import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * Text search `q` on the placemarks: each word must appear, case-insensitively, in the name or the
 * description. A trigram GIN index (pg_trgm, in PostgreSQL's contrib and in PGlite's) over the name and
 * the description joined by a space answers `ILIKE '%word%'` on that text: a word holds no whitespace,
 * so it matches the joined text exactly when it matches one of the two. An import builds the same index
 * on its new table (db/placemark-import.ts).
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db)
  await sql`CREATE INDEX placemarks_search_idx ON placemarks USING gin ((name || ' ' || coalesce(description, '')) gin_trgm_ops)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS placemarks_search_idx`.execute(db)
}
