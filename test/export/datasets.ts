import type { Test } from 'tap'
import { Readable } from 'node:stream'
import { sql } from '../../db/kysely.ts'
import { openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import type { DatabaseHandle } from '../../db/index.ts'

// The export tests' datasets: imported from text, and compared field for field.
export const TZ = 'America/Los_Angeles'

/** Every stored field of the dataset (created_at excepted), in id order. */
export async function dataset (handle: DatabaseHandle) {
  const placemarks = await sql<Record<string, unknown>>`
    SELECT id, name, description, style_id, folder_path, geometry_type, geometry, coordinates_raw, media_links, extended_data,
           bbox::text AS bbox, event_date::text AS event_date, event_timestamp, event_sort, time_begin, time_end, kml_time
    FROM placemarks ORDER BY id`.execute(handle.db)
  const styles = await sql<Record<string, unknown>>`SELECT id, kind, definition FROM styles ORDER BY id`.execute(handle.db)
  const folders = await sql<Record<string, unknown>>`SELECT id, name, path FROM folders ORDER BY id`.execute(handle.db)
  return { placemarks: placemarks.rows, styles: styles.rows, folders: folders.rows }
}

export async function importText (t: Test, text: string | Buffer): Promise<DatabaseHandle> {
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, Readable.from([text]), { timeZone: TZ, source: 'export.kml' })
  return handle
}

/** The two datasets, field for field, naming the first placemark that differs. */
export async function sameDataset (t: Test, actual: DatabaseHandle, expected: DatabaseHandle, what: string) {
  const a = await dataset(actual)
  const e = await dataset(expected)
  t.equal(a.placemarks.length, e.placemarks.length, `${what}: as many placemarks`)
  const differing = a.placemarks.findIndex((row, i) => JSON.stringify(row) !== JSON.stringify(e.placemarks[i]))
  t.same(a.placemarks[differing] ?? null, e.placemarks[differing] ?? null, `${what}: every placemark field for field${differing >= 0 ? ` (first difference at id ${differing + 1})` : ''}`)
  t.same(a.placemarks, e.placemarks, `${what}: placemarks`)
  t.same(a.styles, e.styles, `${what}: styles`)
  t.same(a.folders, e.folders, `${what}: folders`)
}
