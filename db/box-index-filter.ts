import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import { GRID_LEVEL, MAX_MERCATOR_LAT } from '../lib/geo/tile-grid.ts'
import { cellSpan, gridXSql, gridYSql, numericSums, smallShapeSql, type StyleCellGroup } from './tile-cells.ts'
import { TILE_ROW_COLUMNS } from './placemarks.ts'
import type { Database } from './types.ts'
import type { TileRow } from '../lib/geo/tiles.ts'
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

// A cell of a tile's grid, a point's column and row and a small shape's test: the same SQL text as the
// counted cells' (db/tile-cells.ts), from lib/geo/tile-grid.ts's formulas. Constants only.
const gridX = (lon: string) => sql.raw(gridXSql(lon))
const gridY = (lat: string) => sql.raw(gridYSql(lat))
const smallShape = (z: number) => sql.raw(smallShapeSql(z))

/**
 * Tile z/x/y's placemarks matching the filters as its grid counts them, in PostgreSQL (lib/geo/tile-grid.ts:
 * 2^26 cells a side, 16 × 16 per tile), by cell, style id and geometry type: the rows are at most the
 * tile's cells times its styles, however many placemarks it covers. A point's cell comes from its own
 * coordinates (west and north edges inclusive, clamped at the world's edges, none beyond ±85.0511°); a
 * line's or polygon's, when it is smaller than a cell at this zoom, from the centre of its bounds. The
 * bounding-box index finds the candidates. `OFFSET 0` computes each candidate's grid position once: without
 * it PostgreSQL copies the expressions into each of their three uses.
 */
export async function tileCellGroups (db: Kysely<Database>, z: number, x: number, y: number, box: { minLon: number; minLat: number; maxLon: number; maxLat: number }, f: TileFilterValues): Promise<StyleCellGroup[]> {
  const scale = 2 ** (GRID_LEVEL - z)
  const cell = cellSpan(z)
  const parts = placemarkFilterConditions(f)
  const filters = parts.length === 0 ? sql`` : sql`AND ${sql.join(parts, sql` AND `)}`
  const { rows } = await sql<StyleCellGroup>`
    WITH candidates AS (
      SELECT p.id, p.style_id, p.geometry_type,
        CASE WHEN p.geometry_type = 'Point' THEN p.max_lon ELSE (p.min_lon + p.max_lon) / 2 END AS lon,
        CASE WHEN p.geometry_type = 'Point' THEN p.max_lat ELSE (p.min_lat + p.max_lat) / 2 END AS lat
      FROM placemarks p
      WHERE (p.geometry_type = 'Point' OR ${smallShape(z)})
        AND p.bbox && box(point(${box.maxLon}::float8, ${box.maxLat}::float8), point(${box.minLon}::float8, ${box.minLat}::float8)) ${filters}
    ), points AS (
      SELECT id, style_id, geometry_type, ${gridX('lon')} AS gx, ${gridY('lat')} AS gy
      FROM candidates WHERE abs(lat) <= ${MAX_MERCATOR_LAT}::float8 AND abs(lon) <= 180
      OFFSET 0
    )
    SELECT floor(gx / ${cell}::float8)::float8 AS cx, floor(gy / ${cell}::float8)::float8 AS cy, style_id, geometry_type, count(*)::int AS n,
      sum(gx + 0.5)::float8 AS sum_x, sum(gy + 0.5)::float8 AS sum_y, min(id) AS id
    FROM points
    WHERE floor(gx / ${scale}::float8) = ${x}::float8 AND floor(gy / ${scale}::float8) = ${y}::float8
    GROUP BY 1, 2, 3, 4`.execute(db)
  return numericSums(rows)
}

/** The tile fields of these placemarks, in id order. */
export async function tileRows (db: Kysely<Database>, ids: number[]): Promise<TileRow[]> {
  if (ids.length === 0) return []
  const { rows } = await sql<TileRow>`SELECT ${TILE_ROW_COLUMNS} FROM placemarks p WHERE p.id = ANY(${ids}::int[]) ORDER BY p.id`.execute(db)
  return rows
}

/**
 * The lines and polygons a tile of zoom z (a cluster zoom) draws as themselves (not smaller than a cell
 * there) whose bounding box meets the box and that match the filters, the first `limit` by id, as
 * tile rows (the caller tests each geometry exactly).
 */
export async function tileShapes (db: Kysely<Database>, z: number, box: { minLon: number; minLat: number; maxLon: number; maxLat: number }, f: TileFilterValues, limit: number): Promise<TileRow[]> {
  const parts = placemarkFilterConditions(f)
  const filters = parts.length === 0 ? sql`` : sql`AND ${sql.join(parts, sql` AND `)}`
  const { rows } = await sql<TileRow>`
    SELECT ${TILE_ROW_COLUMNS} FROM placemarks p
    WHERE p.geometry_type <> 'Point' AND NOT ${smallShape(z)} AND p.bbox && box(point(${box.maxLon}::float8, ${box.maxLat}::float8), point(${box.minLon}::float8, ${box.minLat}::float8)) ${filters}
    ORDER BY p.id LIMIT ${limit}`.execute(db)
  return rows
}
