import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from './types.ts'
import { intersectsBox, splitBox, type Box, type Geometry } from '../lib/geo/box.ts'
import type { ExportFolder, ExportPlacemark, ExportStyle } from '../lib/kml/writer.ts'

type Db = Kysely<Database>

export interface ExportFilter {
  // A folder name at any level of the placemark's path.
  folder?: string
  // Placemarks whose geometry intersects the box (minLon > maxLon: across the antimeridian).
  box?: Box
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
// commits between two batches is noticed, and the export stops rather than mix two datasets. No
// transaction is held open between batches, so a slow download never holds up an import's swap.
const VERSION = sql`coalesce((SELECT version FROM dataset WHERE id = 1), 0)::int AS dataset_version`

function checkVersion (rows: { dataset_version: number }[], version: number): void {
  if (rows.length > 0 && rows[0].dataset_version !== version) {
    throw new DatasetChangedError(`the dataset changed (version ${version} to ${rows[0].dataset_version}) during the export`)
  }
}

/** Every style, in batches ordered by id. */
export async function * exportStyles (db: Db, version: number, batch = EXPORT_BATCH): AsyncGenerator<ExportStyle[]> {
  let after: string | null = null
  for (;;) {
    const from: RawBuilder<unknown> = after === null ? sql`` : sql`WHERE id > ${after}`
    const { rows } = await sql<{ id: string; kind: 'Style' | 'StyleMap'; definition: string; dataset_version: number }>`
      SELECT id, kind, definition::text AS definition, ${VERSION} FROM styles ${from} ORDER BY id LIMIT ${batch}`.execute(db)
    checkVersion(rows, version)
    if (rows.length === 0) return
    yield rows.map((r) => ({ id: r.id, kind: r.kind, definition: JSON.parse(r.definition) as Record<string, string> }))
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}

/** Every folder, in batches in document order. */
export async function * exportFolders (db: Db, version: number, batch = EXPORT_BATCH): AsyncGenerator<ExportFolder[]> {
  let after = 0
  for (;;) {
    const { rows } = await sql<{ id: number; name: string; path: string; dataset_version: number }>`
      SELECT id, name, array_to_json(path)::text AS path, ${VERSION} FROM folders WHERE id > ${after} ORDER BY id LIMIT ${batch}`.execute(db)
    checkVersion(rows, version)
    if (rows.length === 0) return
    yield rows.map((r) => ({ id: r.id, name: r.name, path: JSON.parse(r.path) as string[] }))
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}

interface ExportRow {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string
  geometry_type: ExportPlacemark['geometryType']
  geometry: string
  coordinates_raw: string | null
  media_links: string
  extended_data: string
  dataset_version: number
}

/** The placemarks the filter keeps, in batches in id order (the box: index candidates, then the exact test). */
export async function * exportPlacemarks (db: Db, version: number, filter: ExportFilter = {}, batch = EXPORT_BATCH): AsyncGenerator<ExportPlacemark[]> {
  const conditions: RawBuilder<unknown>[] = []
  if (filter.folder !== undefined) conditions.push(sql`p.folder_path @> ARRAY[${filter.folder}]::text[]`)
  if (filter.box !== undefined) {
    const overlap = splitBox(filter.box).map((b) => sql`p.bbox && ${`(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`}::box`)
    conditions.push(sql`(${sql.join(overlap, sql` OR `)})`)
  }
  let after = 0
  for (;;) {
    const where = sql.join([sql`p.id > ${after}`, ...conditions], sql` AND `)
    const { rows } = await sql<ExportRow>`
      SELECT p.id, p.name, p.description, p.style_id, array_to_json(p.folder_path)::text AS folder_path, p.geometry_type,
             p.geometry, p.coordinates_raw, array_to_json(p.media_links)::text AS media_links, p.extended_data::text AS extended_data,
             ${VERSION}
      FROM placemarks p WHERE ${where} ORDER BY p.id LIMIT ${batch}`.execute(db)
    checkVersion(rows, version)
    if (rows.length === 0) return
    const kept = filter.box === undefined ? rows : rows.filter((r) => intersectsBox(JSON.parse(r.geometry) as Geometry, filter.box!))
    if (kept.length > 0) {
      yield kept.map((r) => ({
        id: r.id,
        name: r.name,
        description: r.description,
        styleId: r.style_id,
        folderPath: JSON.parse(r.folder_path) as string[],
        geometryType: r.geometry_type,
        geometry: r.geometry,
        coordinatesRaw: r.coordinates_raw,
        mediaLinks: JSON.parse(r.media_links) as string[],
        extendedData: JSON.parse(r.extended_data) as { key: string; value: string }[]
      }))
    }
    if (rows.length < batch) return
    after = rows[rows.length - 1].id
  }
}
