import { sql, type Kysely } from 'kysely'
import type { Selectable } from 'kysely'
import type { Database, PlacemarkTable } from './types.ts'
import { intersectsBox, splitBox, type Box, type Geometry } from '../lib/geo/box.ts'
import type { PlacemarkDetailT, PlacemarkSummaryT, StatsT, TimelineEventT } from '../schemas/placemarks.ts'

type Db = Kysely<Database>

const summaryColumns = [
  'id', 'name', 'description', 'style_id', 'folder_path', 'geometry_type',
  'geometry', 'coordinates_raw', 'media_links', 'created_at'
] as const

type SummaryRow = Omit<Selectable<PlacemarkTable>, 'bbox' | 'extended_data' | 'event_date' | 'event_timestamp' | 'event_sort'>

function toSummary(row: SummaryRow): PlacemarkSummaryT {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    style_id: row.style_id,
    folder_path: row.folder_path,
    geometry_type: row.geometry_type,
    geometry: row.geometry,
    coordinates_raw: row.coordinates_raw,
    media_links: row.media_links,
    created_at: row.created_at.toISOString()
  }
}

export async function listPlacemarks(db: Db, q: { limit: number; offset: number; folder?: string }): Promise<PlacemarkSummaryT[]> {
  let query = db.selectFrom('placemarks').select(summaryColumns).orderBy('id').limit(q.limit).offset(q.offset)
  // Array containment is GIN-indexed; it means "the folder name appears at some level of the path".
  if (q.folder !== undefined) query = query.where(sql<boolean>`folder_path @> ARRAY[${q.folder}]::text[]`)
  const rows = await query.execute()
  return rows.map(toSummary)
}

export async function getPlacemark(db: Db, id: number): Promise<PlacemarkDetailT | undefined> {
  const row = await db.selectFrom('placemarks').select([...summaryColumns, 'extended_data']).where('id', '=', id).executeTakeFirst()
  if (!row) return undefined
  return { ...toSummary(row), extended_data: row.extended_data }
}

function boxLiteral(b: Box): string {
  return `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`
}

// The GiST index finds candidates by bounding box (its comparisons are slightly fuzzy); the exact
// ST_Intersects-like test then runs on each candidate's geometry.
export async function placemarksInBox(db: Db, box: Box, limit: number): Promise<PlacemarkSummaryT[]> {
  const parts = splitBox(box).map(boxLiteral)
  const overlap = sql.join(parts.map((p) => sql`bbox && ${p}::box`), sql` OR `)
  const out: PlacemarkSummaryT[] = []
  // Most candidates pass the exact test (points always do), so a page a little over the limit usually suffices.
  const page = Math.min(limit + 32, 20000)
  let after = 0
  for (;;) {
    // Candidate ids come from an index-only scan of the GiST index (it includes id); only the page's
    // rows are then read from the table.
    // Arrays come as JSON text and the time as whole epoch milliseconds (truncated, as the driver's Date
    // is): decoding those is cheaper than the driver's text-array and timestamp parsers, and this path
    // decodes every candidate row (about a fifth less server CPU per request over 1M placemarks).
    const { rows } = await sql<Omit<SummaryRow, 'folder_path' | 'media_links' | 'created_at'> & { folder_path: string; media_links: string; created_ms: number }>`
      WITH ids AS MATERIALIZED (
        SELECT id FROM placemarks WHERE (${overlap}) AND id > ${after} ORDER BY id LIMIT ${page}
      )
      SELECT p.id, p.name, p.description, p.style_id, array_to_json(p.folder_path)::text AS folder_path, p.geometry_type,
             p.geometry, p.coordinates_raw, array_to_json(p.media_links)::text AS media_links,
             (extract(epoch FROM date_trunc('milliseconds', p.created_at)) * 1000)::float8 AS created_ms
      FROM placemarks p JOIN ids ON ids.id = p.id
      ORDER BY p.id`.execute(db)
    for (const row of rows) {
      if (intersectsBox(JSON.parse(row.geometry) as Geometry, box)) {
        out.push({
          id: row.id, name: row.name, description: row.description, style_id: row.style_id,
          folder_path: JSON.parse(row.folder_path) as string[], geometry_type: row.geometry_type, geometry: row.geometry,
          coordinates_raw: row.coordinates_raw, media_links: JSON.parse(row.media_links) as string[],
          created_at: new Date(Math.round(row.created_ms)).toISOString()
        })
        if (out.length >= limit) return out
      }
    }
    if (rows.length < page) return out
    after = rows[rows.length - 1].id
  }
}

export async function timelineEvents(db: Db): Promise<TimelineEventT[]> {
  const { rows } = await sql<{
    id: number; name: string; description: string | null; media_links: string[]; folder_path: string[]
    event_date: string; event_timestamp: Date | null; lon: number; lat: number
  }>`
    SELECT id, name, description, media_links, folder_path, event_date, event_timestamp,
           (center(bbox))[0] AS lon, (center(bbox))[1] AS lat
    FROM placemarks
    WHERE event_sort IS NOT NULL
    ORDER BY event_sort, id`.execute(db)
  return rows.map((r) => ({
    timestamp: r.event_timestamp ? r.event_timestamp.toISOString().replace('.000Z', 'Z') : null,
    date: r.event_date,
    name: r.name,
    description: r.description,
    location: { lat: r.lat, lon: r.lon },
    media_links: r.media_links,
    placemark_id: r.id,
    folder_path: r.folder_path
  }))
}

export async function folderNames(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM folders GROUP BY name ORDER BY name COLLATE "C"`.execute(db)
  return rows.map((r) => r.name)
}

export async function datasetStats(db: Db): Promise<StatsT> {
  const [totals, types, folders] = await Promise.all([
    sql<{ placemarks: number; styles: number }>`
      SELECT (SELECT count(*) FROM placemarks)::int AS placemarks, (SELECT count(*) FROM styles)::int AS styles`.execute(db),
    sql<{ geometry_type: string; n: number }>`
      SELECT geometry_type, count(*)::int AS n FROM placemarks GROUP BY geometry_type ORDER BY geometry_type`.execute(db),
    sql<{ name: string; n: number }>`
      SELECT f.name, count(DISTINCT p.id)::int AS n
      FROM placemarks p CROSS JOIN LATERAL unnest(p.folder_path) AS f(name)
      GROUP BY f.name ORDER BY n DESC, f.name COLLATE "C" LIMIT 10`.execute(db)
  ])
  return {
    total_placemarks: totals.rows[0].placemarks,
    total_styles: totals.rows[0].styles,
    geometry_types: Object.fromEntries(types.rows.map((r) => [r.geometry_type, r.n])),
    top_folders: Object.fromEntries(folders.rows.map((r) => [r.name, r.n]))
  }
}
