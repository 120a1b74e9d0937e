import type { Kysely, RawBuilder } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { intersectsBox, splitBox, type Box, type Geometry } from '../lib/geo/box.ts'
import type { ExportFolder, ExportPlacemark, ExportStyle } from '../lib/kml/writer.ts'
import { placemarkFilterConditions } from './ogc.ts'

type Db = Kysely<Database>

export interface ExportFilter {
  // A folder name at any level of the placemark's path.
  folder?: string
  // Words, each in the name or the description (as the list's `q`).
  q?: string
  // Placemarks whose geometry intersects the box (minLon > maxLon: across the antimeridian).
  box?: Box
  // Placemarks whose KML time intersects [from, to] (ISO instants; either end open), as the OGC items and tiles mean it.
  datetime?: { from: string | null; to: string | null }
}

/** The dataset changed while an export was being read: its rows would mix two versions. */
export class DatasetChangedError extends Error {
  override name = 'DatasetChangedError'
}

// Rows per query: one batch of each kind is held at a time, whatever the dataset's size.
export const EXPORT_BATCH = 1000

/** The served dataset's version (0 when nothing was imported), the name of the file it came from and when. */
export async function exportHeader (db: Db): Promise<{ version: number; source: string | null; importedAt: Date | null }> {
  const { rows } = await sql<{ version: number; source: string | null; imported_at: Date }>`SELECT version::int AS version, source, imported_at FROM dataset WHERE id = 1`.execute(db)
  return rows[0] ? { version: rows[0].version, source: rows[0].source, importedAt: rows[0].imported_at } : { version: 0, source: null, importedAt: null }
}

// Each batch's statement reads the dataset version with its rows (one snapshot): an import that
// commits between two batches is noticed, and the export stops rather than mix two datasets (or end
// early, the new dataset having fewer rows). No transaction is held open between batches, so a slow
// download never holds up an import's swap.
async function batchOf<R extends object> (db: Db, version: number, rows: RawBuilder<R>): Promise<R[]> {
  const { rows: out } = await sql<{ dataset_version: number; row: R | null }>`
    SELECT d.dataset_version, to_json(r) AS row
    FROM (SELECT coalesce((SELECT version FROM dataset WHERE id = 1), 0)::int AS dataset_version) d
    LEFT JOIN LATERAL (${rows}) r ON true`.execute(db)
  const seen = out[0]?.dataset_version ?? version
  if (seen !== version) throw new DatasetChangedError(`the dataset changed (version ${version} to ${seen}) during the export`)
  return out.filter((r) => r.row !== null).map((r) => r.row!)
}

/** Every style, in batches ordered by id. */
export async function * exportStyles (db: Db, version: number, batch = EXPORT_BATCH): AsyncGenerator<ExportStyle[]> {
  let after: string | null = null
  for (;;) {
    const from: RawBuilder<unknown> = after === null ? sql`` : sql`WHERE id > ${after}`
    const rows = await batchOf(db, version, sql<{ id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }>`
      SELECT id, kind, definition FROM styles ${from} ORDER BY id LIMIT ${batch}`)
    if (rows.length === 0) return
    yield rows
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}

/** The dataset's images (a KMZ's icons) at their paths, for the KMZ export; bounded by the import's limits. */
export async function exportIcons (db: Db, version: number): Promise<{ name: string; data: Buffer }[]> {
  const rows = await batchOf(db, version, sql<{ name: string; data: string }>`SELECT name, encode(data, 'base64') AS data FROM dataset_icons ORDER BY name`)
  return rows.map((r) => ({ name: r.name, data: Buffer.from(r.data, 'base64') }))
}

/** Every folder, in batches in document order. */
export async function * exportFolders (db: Db, version: number, batch = EXPORT_BATCH): AsyncGenerator<ExportFolder[]> {
  let after = 0
  for (;;) {
    const rows = await batchOf(db, version, sql<ExportFolder>`SELECT id, name, path FROM folders WHERE id > ${after} ORDER BY id LIMIT ${batch}`)
    if (rows.length === 0) return
    yield rows
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}

interface ExportRow {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string[]
  geometry_type: ExportPlacemark['geometryType']
  geometry: string
  coordinates_raw: string | null
  media_links: string[]
  extended_data: { key: string; value: string }[]
  // As the driver hands them over: a Date, or the text of a JSON-built row.
  time_begin: Date | string | null
  time_end: Date | string | null
  kml_time: ExportPlacemark['time']
}

const isoOrNull = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString())

/** The placemarks the filter keeps, in batches in id order (the box: index candidates, then the exact test). */
export async function * exportPlacemarks (db: Db, version: number, filter: ExportFilter = {}, batch = EXPORT_BATCH): AsyncGenerator<ExportPlacemark[]> {
  const conditions: RawBuilder<unknown>[] = placemarkFilterConditions(filter)
  if (filter.box !== undefined) {
    const overlap = splitBox(filter.box).map((b) => sql`p.bbox && ${`(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`}::box`)
    conditions.push(sql`(${sql.join(overlap, sql` OR `)})`)
  }
  let after = 0
  for (;;) {
    const where = sql.join([sql`p.id > ${after}`, ...conditions], sql` AND `)
    const rows = await batchOf(db, version, sql<ExportRow>`
      SELECT p.id, p.name, p.description, p.style_id, p.folder_path, p.geometry_type,
             p.geometry, p.coordinates_raw, p.media_links, p.extended_data, p.time_begin, p.time_end, p.kml_time
      FROM placemarks p WHERE ${where} ORDER BY p.id LIMIT ${batch}`)
    if (rows.length === 0) return
    const kept = filter.box === undefined ? rows : rows.filter((r) => intersectsBox(JSON.parse(r.geometry) as Geometry, filter.box!))
    if (kept.length > 0) {
      yield kept.map((r) => ({
        id: r.id,
        name: r.name,
        description: r.description,
        styleId: r.style_id,
        folderPath: r.folder_path,
        geometryType: r.geometry_type,
        geometry: r.geometry,
        coordinatesRaw: r.coordinates_raw,
        mediaLinks: r.media_links,
        extendedData: r.extended_data,
        timeBegin: isoOrNull(r.time_begin),
        timeEnd: isoOrNull(r.time_end),
        time: r.kml_time
      }))
    }
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}
