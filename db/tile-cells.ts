import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import { GRID_BITS, GRID_LEVEL, MAX_MERCATOR_LAT } from '../lib/geo/tile-grid.ts'
import type { StyleResolver } from '../lib/kml/resolved-style.ts'
import { STYLES_QUERY, styleResolverOf } from './box-index-styles.ts'
import type { Database } from './types.ts'
import { TILE_ROW_COLUMNS } from './placemarks.ts'
import type { TileRow } from '../lib/geo/tiles.ts'

/**
 * The grid of the vector tiles' clusters (lib/geo/tile-grid.ts) in SQL, and its low zooms counted once
 * per dataset version.
 *
 * A tile's clusters on the database path (no box index loaded) are its points, and its lines and polygons
 * smaller than a cell, counted by cell in PostgreSQL. Counted as they are asked, a tile's query reads
 * every placemark of its box: a world tile of 10M placemarks reads all ten million. So the import counts
 * zooms 0 to TILE_CELLS_MAX_ZOOM once, in `tile_cells` (migration 026), by cell, kind (points; lines and
 * polygons), the colour a cluster takes from them (the resolved style's icon colour for a point, its line
 * colour for a shape: the import knows the styles) and the last of these zooms at which the placemark
 * counts in a cell (a point at all of them, a shape while it is smaller than a cell): a tile of those
 * zooms then reads its own rows, at most its 256 cells times its colours, kinds and last zooms, whatever
 * the placemarks and however many styles share a colour; and, in `tile_shapes`, the lines and polygons larger than a
 * cell at one of these zooms, the few that such a tile draws whole (found by their bounds' index, where the
 * tile's own query tests every shape of its box). The rows add up to the groups that the tile's own query
 * gives (`db/box-index-filter.ts` tileCellGroups, from the same expressions, by style, merged by colour in
 * colourGroups): sums of positions in grid units are exact in float8 (half-units, under 2^52 at 10M
 * placemarks), so any order of summing gives the same centres. The table is replaced in the import's
 * transaction with the placemarks; filtered tiles (folder, q, datetime) and zooms past these are counted
 * as they are asked. A change to what is counted (the statements, TILE_CELLS_MAX_ZOOM) needs a migration
 * that counts them again, as 026 did.
 */

/** The highest zoom whose cells are counted once per dataset version: every cluster zoom below TILE_CLUSTER_MAX_ZOOM's default. */
export const TILE_CELLS_MAX_ZOOM = 13
/**
 * The highest zoom whose large lines and polygons are listed once per dataset version (`tile_shapes`).
 * Above it a tile reads them from the placemarks' bounds index as asked: the shapes larger than a cell at
 * zooms 12 and 13 are most of a dataset's shapes (at 10M generated placemarks, all 2M of them, 54 s of
 * the import for their index), and listing them saves a tile nothing, since it reads and draws each.
 */
export const TILE_SHAPES_MAX_ZOOM = 11

const SIDE = 2 ** GRID_LEVEL

/** A longitude's column on the grid's finest level (clamped at the world's edges), as SQL text over an expression. */
export const gridXSql = (lon: string) => `least(${SIDE - 1}::float8, greatest(0::float8, floor(((${lon} + 180) / 360) * ${SIDE}::float8)))`
/** A latitude's row on the grid's finest level, counted from the north (clamped), as SQL text. */
export const gridYSql = (lat: string) =>
  `least(${SIDE - 1}::float8, greatest(0::float8, floor(((1 - ln(tan((${lat} * pi()) / 180) + 1 / cos((${lat} * pi()) / 180)) / pi()) / 2) * ${SIDE}::float8)))`
const heldLatSql = (lat: string) => `least(${MAX_MERCATOR_LAT}::float8, greatest(${-MAX_MERCATOR_LAT}::float8, ${lat}))`

/** The larger of a line's or polygon's width and height in cells of the finest level (p: the placemark's row). */
export const shapeSpanSql = `greatest(${gridXSql('p.max_lon')} - ${gridXSql('p.min_lon')}, ${gridYSql(heldLatSql('p.min_lat'))} - ${gridYSql(heldLatSql('p.max_lat'))})`

/** A cell of a tile's grid at zoom z, in cells of the finest level. */
export const cellSpan = (z: number) => 2 ** (GRID_LEVEL - z - GRID_BITS)

/** Whether a line or polygon is smaller than a cell at zoom z, its bounds' centre within Web Mercator's latitudes. */
export const smallShapeSql = (z: number) => `(abs((p.min_lat + p.max_lat) / 2) <= ${MAX_MERCATOR_LAT}::float8 AND ${shapeSpanSql} < ${cellSpan(z)}::float8)`

// The last zoom (up to TILE_CELLS_MAX_ZOOM) at which a placemark of this span counts in a cell (a point's
// span is 0); -1 for a shape larger than a cell at zoom 0.
const lastCellZoomSql = (span: string) => {
  const arms: string[] = []
  for (let z = TILE_CELLS_MAX_ZOOM; z >= 0; z--) arms.push(`WHEN ${span} < ${cellSpan(z)}::float8 THEN ${z}`)
  return `CASE ${arms.join(' ')} ELSE -1 END`
}

// A placemark's position as its cell counts it: a point's own, the centre of a line's or polygon's bounds.
const positionSql = (source: string) => `SELECT p.id, p.style_id, p.geometry_type, p.min_lon, p.min_lat, p.max_lon, p.max_lat, p.bbox,
  CASE WHEN p.geometry_type = 'Point' THEN p.max_lon ELSE (p.min_lon + p.max_lon) / 2 END AS lon,
  CASE WHEN p.geometry_type = 'Point' THEN p.max_lat ELSE (p.min_lat + p.max_lat) / 2 END AS lat
  FROM ${source} p`

/** The colour a cluster takes from a placemark: its resolved style's icon colour (a point) or line colour (a line or polygon); '' for none. */
export const cellColour = (resolver: StyleResolver, styleId: string | null, point: boolean): string =>
  resolver.resolve(styleId, point ? 'Point' : 'LineString').color ?? ''

/**
 * The statements that fill the empty tile_cells and tile_shapes from the placemarks of `source`:
 * the finest zoom's cells from the placemarks, then each zoom below from the one above (a cell is four of
 * the next zoom's; a zoom keeps the shapes that count only at lower zooms, for them); and the large shapes.
 * Each row's grid position and span are computed once (`OFFSET 0` keeps PostgreSQL from copying their
 * expressions into every place that uses them). The first statement takes one parameter, the styles'
 * colours as JSON (`[{style_id, point_color, shape_color}]`, see fillTileCells); the text is constants only.
 */
export function tileCellStatements (source: string): string[] {
  const z = TILE_CELLS_MAX_ZOOM
  const cell = cellSpan(z)
  const tile = cell * 2 ** GRID_BITS
  const finest = `INSERT INTO tile_cells (z, x, y, cx, cy, point, color, last_zoom, n, sum_x, sum_y, id)
    SELECT ${z}, floor(gx / ${tile}::float8)::int, floor(gy / ${tile}::float8)::int, floor(gx / ${cell}::float8)::int, floor(gy / ${cell}::float8)::int,
      g.point, CASE WHEN g.point THEN coalesce(c.point_color, '') ELSE coalesce(c.shape_color, '') END, last_zoom, count(*)::int, sum(gx + 0.5), sum(gy + 0.5), min(id)
    FROM (
      SELECT id, style_id, point, gx, gy, ${lastCellZoomSql('span')} AS last_zoom
      FROM (
        SELECT p.id, p.style_id, p.geometry_type = 'Point' AS point, ${gridXSql('p.lon')} AS gx, ${gridYSql('p.lat')} AS gy,
          CASE WHEN p.geometry_type = 'Point' THEN 0::float8 ELSE ${shapeSpanSql} END AS span
        FROM (${positionSql(source)}) p
        WHERE abs(p.lat) <= ${MAX_MERCATOR_LAT}::float8 AND abs(p.lon) <= 180
        OFFSET 0
      ) s
    ) g
    LEFT JOIN json_to_recordset($1::json) AS c(style_id text, point_color text, shape_color text) ON c.style_id = g.style_id
    WHERE last_zoom >= 0
    GROUP BY 2, 3, 4, 5, 6, 7, last_zoom`
  const statements = [finest]
  for (let below = z - 1; below >= 0; below--) {
    statements.push(`INSERT INTO tile_cells (z, x, y, cx, cy, point, color, last_zoom, n, sum_x, sum_y, id)
      SELECT ${below}, x / 2, y / 2, cx / 2, cy / 2, point, color, last_zoom, sum(n)::int, sum(sum_x), sum(sum_y), min(id)
      FROM tile_cells WHERE z = ${below + 1}
      GROUP BY x / 2, y / 2, cx / 2, cy / 2, point, color, last_zoom`)
  }
  // The lines and polygons larger than a cell at a zoom up to TILE_SHAPES_MAX_ZOOM (or with their centre
  // beyond Web Mercator's latitudes, in no cell): what such a tile draws whole.
  statements.push(`INSERT INTO tile_shapes (id, last_zoom, bbox)
    SELECT id, last_zoom, bbox FROM (
      SELECT id, bbox, CASE WHEN span IS NULL THEN -1 ELSE ${lastCellZoomSql('span')} END AS last_zoom
      FROM (
        SELECT p.id, p.bbox, CASE WHEN abs(p.lat) <= ${MAX_MERCATOR_LAT}::float8 THEN ${shapeSpanSql} END AS span
        FROM (${positionSql(source)}) p
        WHERE p.geometry_type <> 'Point'
        OFFSET 0
      ) s
    ) l
    WHERE last_zoom < ${TILE_SHAPES_MAX_ZOOM}`)
  return statements
}

/** The table's definition (migration 026). */
export const TILE_CELLS_TABLE = `CREATE TABLE tile_cells (
  z smallint NOT NULL,
  x int NOT NULL,
  y int NOT NULL,
  cx int NOT NULL,
  cy int NOT NULL,
  point boolean NOT NULL,
  color text NOT NULL,
  last_zoom smallint NOT NULL,
  n int NOT NULL,
  sum_x float8 NOT NULL,
  sum_y float8 NOT NULL,
  id int NOT NULL
)`
/** The lines and polygons larger than a cell at some zoom up to TILE_SHAPES_MAX_ZOOM (larger from the zoom after `last_zoom`; −1: at every zoom). */
export const TILE_SHAPES_TABLE = `CREATE TABLE tile_shapes (
  id int PRIMARY KEY,
  last_zoom smallint NOT NULL,
  bbox box NOT NULL
)`
export const TILE_CELLS_INDEX = 'CREATE INDEX tile_cells_tile_idx ON tile_cells (z, x, y)'
/**
 * The large shapes by zoom (migration 026; their bounds' GiST came with 025): a low zoom's tile covers
 * most of the world, where the bounds' index finds every listed shape (67,000 at 10M) to keep the few
 * large at that zoom; the zoom's index finds those few.
 */
export const TILE_SHAPES_ZOOM_INDEX = 'CREATE INDEX tile_shapes_zoom_idx ON tile_shapes (last_zoom)'

/** A query on the caller's connection, in its transaction: text with $1… parameters. */
export type TileCellQuery = (text: string, values?: unknown[]) => Promise<{ rows: unknown[] }>

/**
 * Replaces tile_cells' and tile_shapes' rows with those of the placemarks of `source`, in the caller's
 * transaction, with the colours of the styles in `styles` (the import's, written before).
 */
export async function fillTileCells (query: TileCellQuery, source: string): Promise<void> {
  const rows = (await query(STYLES_QUERY)).rows as Parameters<typeof styleResolverOf>[0]
  const resolver = styleResolverOf(rows)
  const colours = rows.map(({ id }) => ({ style_id: id, point_color: cellColour(resolver, id, true), shape_color: cellColour(resolver, id, false) }))
  await query('DELETE FROM tile_cells')
  await query('DELETE FROM tile_shapes')
  const [finest, ...rest] = tileCellStatements(source)
  await query(finest, [JSON.stringify(colours)])
  for (const statement of rest) await query(statement)
}

/** One group of a tile's placemarks counted by cell: a grid cell, points or shapes, a colour, with the sums of positions and the least id. */
export interface CellGroup { cx: number; cy: number; point: boolean; color: string; n: number; sum_x: number; sum_y: number; id: number }

/** Tile z/x/y's groups, unfiltered, from the counted cells (z at most TILE_CELLS_MAX_ZOOM). */
export async function countedCellGroups (db: Kysely<Database>, z: number, x: number, y: number): Promise<CellGroup[]> {
  const { rows } = await sql<CellGroup>`
    SELECT cx, cy, point, color, sum(n)::int AS n, sum(sum_x)::float8 AS sum_x, sum(sum_y)::float8 AS sum_y, min(id) AS id
    FROM tile_cells WHERE z = ${z} AND x = ${x} AND y = ${y} AND last_zoom >= ${z}
    GROUP BY cx, cy, point, color`.execute(db)
  return numericSums(rows)
}

/** Cell groups as the driver gives them (float8 and bigint columns may come as text) as numbers. */
export function numericSums<T extends { cx: number; cy: number; sum_x: number; sum_y: number }> (rows: T[]): T[] {
  return rows.map((r) => ({ ...r, cx: Number(r.cx), cy: Number(r.cy), sum_x: Number(r.sum_x), sum_y: Number(r.sum_y) }))
}

/** A tile's groups by style and geometry type, as its own query counts them (db/box-index-filter.ts). */
export interface StyleCellGroup { cx: number; cy: number; style_id: string | null; geometry_type: string; n: number; sum_x: number; sum_y: number; id: number }

/** Groups by style merged into groups by colour (cellColour): the rows countedCellGroups gives for the same placemarks. */
export function colourGroups (rows: StyleCellGroup[], resolver: StyleResolver): CellGroup[] {
  const merged = new Map<string, CellGroup>()
  for (const r of rows) {
    const point = r.geometry_type === 'Point'
    const color = cellColour(resolver, r.style_id, point)
    const key = `${r.cx} ${r.cy} ${point ? 1 : 0} ${color}`
    const group = merged.get(key)
    if (group === undefined) merged.set(key, { cx: r.cx, cy: r.cy, point, color, n: r.n, sum_x: r.sum_x, sum_y: r.sum_y, id: r.id })
    else {
      group.n += r.n
      group.sum_x += r.sum_x
      group.sum_y += r.sum_y
      group.id = Math.min(group.id, r.id)
    }
  }
  return [...merged.values()]
}

/**
 * The lines and polygons an unfiltered tile of zoom z (at most TILE_SHAPES_MAX_ZOOM) draws as themselves
 * (not smaller than a cell there) whose bounding box meets the box, the first `limit` by id, as tile
 * rows: what tileShapes (db/box-index-filter.ts) gives, from the shapes counted as large.
 */
export async function countedShapes (db: Kysely<Database>, z: number, box: { minLon: number; minLat: number; maxLon: number; maxLat: number }, limit: number): Promise<TileRow[]> {
  const { rows } = await sql<TileRow>`
    SELECT ${TILE_ROW_COLUMNS} FROM tile_shapes s JOIN placemarks p ON p.id = s.id
    WHERE s.last_zoom < ${z} AND s.bbox && box(point(${box.maxLon}::float8, ${box.maxLat}::float8), point(${box.minLon}::float8, ${box.minLat}::float8))
    ORDER BY s.id LIMIT ${limit}`.execute(db)
  return rows
}
