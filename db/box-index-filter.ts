import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { placemarkFilterConditions } from './ogc.ts'

/** The tiles' filters, as the OGC items take them: a folder name at any level, text words, a time interval (ISO instants, either end open). */
export interface TileFilterValues {
  folder?: string
  q?: string
  datetime?: { from: string | null; to: string | null }
}

/**
 * The placemarks matching the filters, as flags by id (1: matches), with the same conditions as the OGC
 * items (db/ogc.ts) and /api/v1/placemarks: the folder by array containment, each word in the name or
 * the description, a time intersecting the interval.
 */
export async function matchingPlacemarks (db: Kysely<Database>, f: TileFilterValues): Promise<Uint8Array> {
  const parts = placemarkFilterConditions(f)
  const where = parts.length === 0 ? sql`` : sql`WHERE ${sql.join(parts, sql` AND `)}`
  // One text of ids, not a row per id.
  const { rows: [row] } = await sql<{ ids: string | null; max_id: number | null }>`
    SELECT string_agg(p.id::text, ',') AS ids, (SELECT max(id) FROM placemarks) AS max_id FROM placemarks p ${where}`.execute(db)
  const flags = new Uint8Array((row?.max_id ?? 0) + 1)
  const text = row?.ids ?? ''
  if (text === '') return flags
  for (let k = 0, v = 0; k <= text.length; k++) {
    const c = k < text.length ? text.charCodeAt(k) : 44
    if (c === 44) {
      flags[v] = 1
      v = 0
    } else {
      v = v * 10 + c - 48
    }
  }
  return flags
}

/** One group of a tile's points counted in the database: a grid cell and a style, with the sums of positions. */
export interface CellGroup { cx: number; cy: number; style_id: string | null; n: number; sum_x: number; sum_y: number; id: number }

/**
 * Tile z/x/y's Point placemarks matching the filters, counted in PostgreSQL on the tiles' grid
 * (lib/geo/tile-grid.ts: 2^26 cells a side, 16 × 16 per tile) by cell and style id: the rows are at most
 * the tile's cells times its styles, however many points it covers. A point's cell comes from its own
 * coordinates with the grid's formula (west and north edges inclusive, clamped at the world's edges,
 * none beyond ±85.0511°); the bounding-box index finds the candidates.
 */
export async function tileCellGroups (db: Kysely<Database>, z: number, x: number, y: number, box: { minLon: number; minLat: number; maxLon: number; maxLat: number }, f: TileFilterValues): Promise<CellGroup[]> {
  const side = 2 ** 26
  const scale = 2 ** (26 - z)
  const cell = scale / 16
  const parts = placemarkFilterConditions(f)
  const filters = parts.length === 0 ? sql`` : sql`AND ${sql.join(parts, sql` AND `)}`
  const { rows } = await sql<CellGroup>`
    WITH points AS (
      SELECT p.id, p.style_id,
        least(${side - 1}::float8, greatest(0::float8, floor(((p.max_lon + 180) / 360) * ${side}::float8))) AS gx,
        least(${side - 1}::float8, greatest(0::float8, floor(((1 - ln(tan((p.max_lat * pi()) / 180) + 1 / cos((p.max_lat * pi()) / 180)) / pi()) / 2) * ${side}::float8))) AS gy
      FROM placemarks p
      WHERE p.geometry_type = 'Point' AND abs(p.max_lat) <= 85.0511287798066 AND abs(p.max_lon) <= 180
        AND p.bbox && box(point(${box.maxLon}::float8, ${box.maxLat}::float8), point(${box.minLon}::float8, ${box.minLat}::float8)) ${filters}
    )
    SELECT floor(gx / ${cell}::float8)::float8 AS cx, floor(gy / ${cell}::float8)::float8 AS cy, style_id, count(*)::int AS n,
      sum(gx + 0.5)::float8 AS sum_x, sum(gy + 0.5)::float8 AS sum_y, min(id) AS id
    FROM points
    WHERE floor(gx / ${scale}::float8) = ${x}::float8 AND floor(gy / ${scale}::float8) = ${y}::float8
    GROUP BY 1, 2, 3`.execute(db)
  return rows.map((r) => ({ ...r, cx: Number(r.cx), cy: Number(r.cy), sum_x: Number(r.sum_x), sum_y: Number(r.sum_y) }))
}

/** The summaries of these placemarks, in id order. */
export async function placemarkSummaries (db: Kysely<Database>, ids: number[]): Promise<string[]> {
  if (ids.length === 0) return []
  const { rows } = await sql<{ summary: string }>`SELECT p.summary FROM placemarks p WHERE p.id = ANY(${ids}::int[]) ORDER BY p.id`.execute(db)
  return rows.map((r) => r.summary)
}

/**
 * The lines and polygons whose bounding box meets the box and that match the filters, the first `limit`
 * by id, as summaries with their geometries (the caller tests each exactly).
 */
export async function tileShapes (db: Kysely<Database>, box: { minLon: number; minLat: number; maxLon: number; maxLat: number }, f: TileFilterValues, limit: number): Promise<{ summary: string; geometry: string }[]> {
  const parts = placemarkFilterConditions(f)
  const filters = parts.length === 0 ? sql`` : sql`AND ${sql.join(parts, sql` AND `)}`
  const { rows } = await sql<{ summary: string; geometry: string }>`
    SELECT p.summary, p.geometry FROM placemarks p
    WHERE p.geometry_type <> 'Point' AND p.bbox && box(point(${box.maxLon}::float8, ${box.maxLat}::float8), point(${box.minLon}::float8, ${box.minLat}::float8)) ${filters}
    ORDER BY p.id LIMIT ${limit}`.execute(db)
  return rows
}
