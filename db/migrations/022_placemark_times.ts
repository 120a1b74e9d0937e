import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * Two things about a placemark's times that an import now keeps.
 *
 * `kml_time`, its KML time as written: the placemark's time element and the texts it held, `{"when": "1997"}` for a
 * `<TimeStamp>`, `{"begin": "2017-09", "end": "2017-10-01"}` for a `<TimeSpan>` (either end may be
 * absent), only the values that name a period (those `time_begin`/`time_end` were read from); null for a
 * placemark without time. The export writes it back as it came, element and precision
 * (db/placemark-export.ts, lib/kml/writer.ts). Rows imported before it stay null: their export writes
 * `time_begin`/`time_end` as instants, as it did.
 *
 * `event_time_inferred`, true when the time in its name had no AM/PM and took it from a neighbouring name
 * of the same date (lib/timeline/meridiem.ts); null otherwise. Rows imported before it stay null: their
 * names are read as 24-hour until the next import.
 *
 * An import's new table takes the columns from this one.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE placemarks ADD COLUMN kml_time jsonb, ADD COLUMN event_time_inferred boolean`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE placemarks DROP COLUMN kml_time, DROP COLUMN event_time_inferred`.execute(db)
}
