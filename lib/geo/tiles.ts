import { geoJSONToTile, type GeoJSONVTFeature } from '@maplibre/geojson-vt'
import { encodeTile } from './mvt.ts'
import type { Box, Geometry } from './box.ts'
import type { BoxIndex } from './box-index.ts'
import { MAX_MERCATOR_LAT, mercatorX, mercatorY, type GridCell } from './tile-grid.ts'
import type { ResolvedStyle, StyleResolver } from '../kml/resolved-style.ts'
import { summaryTileFields } from '../placemarks/box-answer.ts'

// Vector tiles (Mapbox Vector Tile 2.1) of the placemarks: pure functions from the placemarks of a
// tile's box (and the clusters of its grid, lib/geo/tile-grid.ts) to the tile's bytes. Lines and
// polygons are clipped and simplified for the zoom by geojson-vt, the layer encoded with pbf (lib/geo/mvt.ts).

export const TILE_EXTENT = 4096
export const TILE_LAYER = 'placemarks'
export const TILE_LAYER_VERSION = 2
export const MAX_TILE_ZOOM = 22
// Geometry kept around each tile (in tile units): lines and labels cross the edge without a seam.
export const TILE_BUFFER = 64
// Simplification tolerance in tile units (geojson-vt's default of 3 on a 4096 grid).
const TOLERANCE = 3
export { MAX_MERCATOR_LAT } from './tile-grid.ts'

/** A placemark as a tile shows it: its id, name, geometry type, innermost folder, geometry, resolved style and time. */
export interface TilePlacemark {
  id: number
  name: string
  geometry_type: 'Point' | 'LineString' | 'Polygon'
  /** The innermost folder's name; null at the root (no `folder` property then). */
  folder: string | null
  geometry: Geometry
  style: ResolvedStyle
  /** Its KML time as milliseconds since the epoch; null at an open end or without a time. */
  time_begin: number | null
  time_end: number | null
}

/** A vector tile's coordinates (XYZ: rows from the north). */
export interface TileXYZ { z: number; x: number; y: number }

/**
 * The tile at zoom z that a position falls in (Web Mercator, XYZ), or null beyond Web Mercator's
 * latitudes; the east edge (180°) and the south edge fall in the last column and row.
 */
export function tileOf (lon: number, lat: number, z: number): TileXYZ | null {
  if (!(Math.abs(lat) <= MAX_MERCATOR_LAT) || !(Math.abs(lon) <= 180)) return null
  const n = 2 ** z
  const clamp = (v: number) => (v < 0 ? 0 : v >= n ? n - 1 : v)
  return { z, x: clamp(Math.floor(mercatorX(lon) * n)), y: clamp(Math.floor(mercatorY(lat) * n)) }
}

/** The longitude of a tile column's west edge (x may be fractional). */
export function tileLon (x: number, z: number): number {
  return (x / 2 ** z) * 360 - 180
}

/** The latitude of a tile row's north edge, rows counted from the north (XYZ); y may be fractional. */
export function tileLat (y: number, z: number): number {
  const n = Math.PI * (1 - (2 * y) / 2 ** z)
  return (Math.atan(Math.sinh(n)) * 180) / Math.PI
}

/**
 * The lon/lat box to read for tile z/x/y: the tile itself and a margin of `margin` tile units (out of
 * 4096) on every side, within [-180, 180] × [-90, 90] (no wrapping across the antimeridian). The
 * northern and southern rows reach the poles.
 */
export function tileReadBox (z: number, x: number, y: number, margin = TILE_BUFFER): Box {
  const m = margin / TILE_EXTENT
  const last = 2 ** z - 1
  return {
    minLon: Math.max(-180, tileLon(x - m, z)),
    maxLon: Math.min(180, tileLon(x + 1 + m, z)),
    maxLat: y === 0 ? 90 : Math.min(90, tileLat(y - m, z)),
    minLat: y === last ? -90 : Math.max(-90, tileLat(y + 1 + m, z))
  }
}

type Properties = Record<string, string | number | boolean>

function propertiesOf (p: TilePlacemark): Properties {
  const props: Properties = { id: p.id, name: p.name, geometry_type: p.geometry_type }
  if (p.folder !== null) props.folder = p.folder
  const { color, fill, width, icon } = p.style
  if (color !== undefined) props.color = color
  if (fill !== undefined) props.fill = fill
  if (width !== undefined) props.width = width
  if (icon !== undefined) props.icon = icon
  if (p.time_begin !== null) props.time_begin = p.time_begin
  if (p.time_end !== null) props.time_end = p.time_end
  return props
}

function feature (p: TilePlacemark): GeoJSON.Feature {
  return { type: 'Feature', id: p.id, properties: propertiesOf(p), geometry: p.geometry as GeoJSON.Geometry }
}

// Points of Web Mercator beyond its latitude limit fall in no tile.
const inMercator = (p: TilePlacemark): boolean => p.geometry.type !== 'Point' || Math.abs(p.geometry.coordinates[1]) <= MAX_MERCATOR_LAT

/** A count as a label: 1234 as 1.2k, 12345 as 12k. */
export function abbreviated (n: number): string {
  return n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${Math.round(n / 100) / 10}k` : String(n)
}

/** What a tile shows: placemarks drawn as themselves, and at a cluster zoom the cells of its grid. */
export interface TileContent {
  /** Placemarks drawn as themselves: lines and polygons clipped to the tile and its buffer and simplified for the zoom (none at the highest zoom), points where they are. */
  drawn: TilePlacemark[]
  /** The placemarks alone in their cell (points, and lines and polygons smaller than a cell): drawn whole, not simplified, so that none is dropped. */
  lone?: TilePlacemark[]
  /** The cells of two points or more. */
  clusters?: GridCell[]
  /** The cells of two lines or polygons or more, each smaller than a cell. */
  shapeClusters?: GridCell[]
}

// A cell's side in tile units: a placemark alone in a cell, smaller than one, lies within this of the tile.
const CELL_UNITS = TILE_EXTENT / 16

function tiled (placemarks: TilePlacemark[], z: number, x: number, y: number, buffer: number, tolerance: number): GeoJSONVTFeature[] {
  const shown = placemarks.filter(inMercator)
  const shapes = shown.filter((p) => p.geometry.type !== 'Point').map(feature)
  const out = shapes.length === 0
    ? []
    : geoJSONToTile({ type: 'FeatureCollection', features: shapes }, z, x, y, {
      extent: TILE_EXTENT, buffer, tolerance, maxZoom: MAX_TILE_ZOOM, clip: true, wrap: false
    }).features
  for (const p of shown) if (p.geometry.type === 'Point') pointFeature(p, z, x, y, buffer, out)
  return out
}

/**
 * A Point placemark's feature, as geojson-vt would give it (the same projection, the same clipping to
 * the tile and its buffer, the same rounding), without its general machinery: a tile's points are most
 * of its placemarks, and each went through a FeatureCollection, a clip per axis and a transform.
 */
function pointFeature (p: TilePlacemark, z: number, x: number, y: number, buffer: number, out: GeoJSONVTFeature[]): void {
  const [lon, lat] = p.geometry.coordinates as number[]
  const scale = 1 << z
  const margin = buffer / TILE_EXTENT
  const px = lon / 360 + 0.5
  if (px < (x - margin) / scale || px >= (x + 1 + margin) / scale) return
  const sin = Math.sin((lat * Math.PI) / 180)
  const projected = 0.5 - (0.25 * Math.log((1 + sin) / (1 - sin))) / Math.PI
  const py = projected < 0 ? 0 : projected > 1 ? 1 : projected
  if (py < (y - margin) / scale || py >= (y + 1 + margin) / scale) return
  out.push({ type: 1, tags: propertiesOf(p), geometry: [[Math.round(TILE_EXTENT * (px * scale - x)), Math.round(TILE_EXTENT * (py * scale - y))]], id: p.id } as unknown as GeoJSONVTFeature)
}

function clusterFeature (c: GridCell, count: 'point_count' | 'shape_count'): GeoJSONVTFeature {
  const tags: Properties = { cluster: true, [count]: c.count, [`${count}_abbreviated`]: abbreviated(c.count) }
  if (c.color !== null) tags.color = c.color
  return { type: 1, geometry: [[c.x, c.y]], tags } as unknown as GeoJSONVTFeature
}

/**
 * Tile z/x/y's features (in tile coordinates of TILE_EXTENT): the placemarks drawn and alone in their
 * cell, and the clusters (grid cells of two points or more, lib/geo/tile-grid.ts), each a point feature
 * with `cluster: true`, `point_count`, `point_count_abbreviated` and `color` (no id); the clusters of
 * lines and polygons the same with `shape_count` and `shape_count_abbreviated`.
 */
export function tileFeatures (content: TileContent, z: number, x: number, y: number): GeoJSONVTFeature[] {
  const out = tiled(content.drawn, z, x, y, TILE_BUFFER, TOLERANCE)
  if (content.lone !== undefined && content.lone.length > 0) out.push(...tiled(content.lone, z, x, y, CELL_UNITS, 0))
  for (const c of content.clusters ?? []) out.push(clusterFeature(c, 'point_count'))
  for (const c of content.shapeClusters ?? []) out.push(clusterFeature(c, 'shape_count'))
  return out
}

/** Tile z/x/y as Mapbox Vector Tile bytes (one layer, `placemarks`, version 2), or null when it has no feature. */
export function buildTile (content: TileContent, z: number, x: number, y: number): Buffer | null {
  const features = tileFeatures(content, z, x, y)
  if (features.length === 0) return null
  const bytes = encodeTile(TILE_LAYER, features, { version: TILE_LAYER_VERSION, extent: TILE_EXTENT })
  // A copy of its own length: pbf writes into a buffer grown by doubling, and a view of it would keep
  // the whole buffer alive in the answer cache (102 MiB of buffers for 71 MiB of tiles at 1M).
  return Buffer.from(bytes)
}

/** The fields of the layer's features, as TileJSON's vector_layers lists them. */
export const TILE_FIELDS: Record<string, string> = {
  id: 'Number: the placemark\'s id (also the feature id)',
  name: 'String: the placemark\'s name',
  geometry_type: 'String: Point, LineString or Polygon',
  folder: 'String: the innermost folder\'s name (absent at the root)',
  color: 'String: the resolved KML style\'s icon colour (points) or line colour, CSS #rrggbbaa; on a cluster, the colour most of its points share (absent when the style does not say)',
  fill: 'String: the polygon fill colour, CSS #rrggbbaa (absent when the style does not say)',
  width: 'Number: the line width in pixels (absent when the style does not say)',
  icon: 'String: the icon\'s href (absent when the style names none)',
  time_begin: 'Number: the start of the KML time, milliseconds since the epoch (absent without one)',
  time_end: 'Number: the end of the KML time, milliseconds since the epoch (absent without one or for an open span)',
  cluster: 'Boolean: true on a cluster of points or of shapes (zooms below TILE_CLUSTER_MAX_ZOOM)',
  point_count: 'Number: how many Point placemarks a cluster of points holds',
  point_count_abbreviated: 'String: point_count shortened (1.2k)',
  shape_count: 'Number: how many lines and polygons a cluster of shapes holds (each smaller than a grid cell at this zoom, counted at the centre of its bounds)',
  shape_count_abbreviated: 'String: shape_count shortened (1.2k)'
}

interface SummaryFields {
  id: number
  name: string
  style_id: string | null
  geometry_type: TilePlacemark['geometry_type']
  folder_path: string[]
  geometry: string
  time_begin?: string | null
  time_end?: string | null
}

const epochMs = (iso: string | null | undefined): number | null => {
  if (iso === null || iso === undefined) return null
  const ms = Date.parse(iso)
  return Number.isFinite(ms) ? ms : null
}

/** A placemark as tiles show it, from its serialized summary. */
export function tilePlacemark (summary: string, styles: StyleResolver): TilePlacemark {
  return fromFields(JSON.parse(summary) as SummaryFields, styles)
}

function fromFields (r: SummaryFields, styles: StyleResolver): TilePlacemark {
  return placemarkOf(r, r.folder_path.length > 0 ? r.folder_path[r.folder_path.length - 1] : null, styles)
}

/**
 * A placemark as tiles show it, from the box index's entry i: the same as from its whole summary
 * (tilePlacemark), but the summary's fields read by their keys and the geometry from the index's
 * numbers: parsing the whole summary and then its geometry's JSON was half of a zoom-12 tile's time.
 */
export function entryTilePlacemark (index: Pick<BoxIndex, 'idOf' | 'summaryOf' | 'packedGeometryOf'>, i: number, styles: StyleResolver): TilePlacemark {
  const summary = index.summaryOf(i, false)
  const f = summaryTileFields(summary)
  if (f === null) return tilePlacemark(summary, styles)
  const type = f.geometry_type as TilePlacemark['geometry_type']
  let geometry = index.packedGeometryOf(i)
  if (geometry === null || geometry.type !== type) {
    geometry = type === 'Point' ? pointOf(summary, f.geometryStart, f.geometryEnd) : null
    if (geometry === null) return tilePlacemark(summary, styles)
  }
  return {
    id: index.idOf(i),
    name: f.name,
    geometry_type: type,
    folder: f.folder,
    geometry,
    style: styles.resolve(f.style_id, type),
    time_begin: epochMs(f.time_begin),
    time_end: epochMs(f.time_end)
  }
}

// A point's position from its geometry's JSON text, escaped in the summary (`{\"type\":\"Point\",\"coordinates\":[lon,lat]}`):
// its coordinates array holds no quote, so it is JSON as it stands. Null when the text is not that.
function pointOf (summary: string, start: number, end: number): Geometry | null {
  const open = summary.indexOf('[', start)
  const close = summary.indexOf(']', open)
  if (open === -1 || close === -1 || close > end) return null
  const c = JSON.parse(summary.slice(open, close + 1)) as unknown[]
  return typeof c[0] === 'number' && typeof c[1] === 'number' ? { type: 'Point', coordinates: [c[0], c[1]] } : null
}

/**
 * The fields of a placemark a tile shows, as the database path reads them (db/placemarks.ts
 * TILE_ROW_COLUMNS) rather than its whole summary, whose description, media links and second copy of
 * the geometry a tile has no use for: at 10M placemarks a tile of zoom 12 read 1.8 MB of summaries for
 * 3,500 shapes. The times are the summary's text.
 */
export interface TileRow {
  id: number
  name: string
  style_id: string | null
  /** The innermost folder's name, null at the root. */
  folder: string | null
  geometry_type: TilePlacemark['geometry_type']
  geometry: string
  time_begin?: string | null
  time_end?: string | null
}

/** A placemark as tiles show it, from its row's fields: the same as from its summary. */
export function tileRowPlacemark (r: TileRow, styles: StyleResolver): TilePlacemark {
  return placemarkOf(r, r.folder, styles)
}

function placemarkOf (r: Omit<TileRow, 'folder'>, folder: string | null, styles: StyleResolver): TilePlacemark {
  return {
    id: r.id,
    name: r.name,
    geometry_type: r.geometry_type,
    folder,
    geometry: JSON.parse(r.geometry) as Geometry,
    style: styles.resolve(r.style_id, r.geometry_type),
    time_begin: epochMs(r.time_begin),
    time_end: epochMs(r.time_end)
  }
}

/**
 * The placemarks of serialized summaries (the box query's bytes, from the index or the database) as
 * tiles show them.
 */
export function tilePlacemarks (summaries: { count: number; byteLength: number; copyTo(target: Buffer, offset: number): void }, styles: StyleResolver): TilePlacemark[] {
  if (summaries.count === 0) return []
  const text = Buffer.allocUnsafe(summaries.byteLength + 2)
  text[0] = 0x5b
  summaries.copyTo(text, 1)
  text[text.length - 1] = 0x5d
  const rows = JSON.parse(text.toString('utf8')) as SummaryFields[]
  return rows.map((r) => fromFields(r, styles))
}
