import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * KML time: a placemark's `<TimeStamp>` or `<TimeSpan>` as the period it names (lib/kml/time.ts), from
 * `time_begin` to `time_end`, both inclusive; null at an open end, both null for a placemark without time.
 * An import's new table takes the columns from this one (CREATE TABLE … LIKE placemarks).
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE placemarks ADD COLUMN time_begin timestamptz, ADD COLUMN time_end timestamptz`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE placemarks DROP COLUMN time_begin, DROP COLUMN time_end`.execute(db)
}
