import { geoJSONToTile, type GeoJSONVTFeature, type GeoJSONVTTile } from '@maplibre/geojson-vt'
import { fromGeojsonVt } from '@maplibre/vt-pbf'
import Supercluster, { type PointFeature } from 'supercluster'
import type { Box, Geometry } from './box.ts'

// Vector tiles (Mapbox Vector Tile 2.1) of the placemarks: pure functions from the placemarks of a
// tile's box to the tile's bytes. Lines and polygons are clipped and simplified for the zoom by
// geojson-vt, points clustered by supercluster, the layer encoded by vt-pbf.

export const TILE_EXTENT = 4096
export const TILE_LAYER = 'placemarks'
export const TILE_LAYER_VERSION = 2
export const MAX_TILE_ZOOM = 22
// Geometry kept around each tile (in tile units): lines and labels cross the edge without a seam.
export const TILE_BUFFER = 64
// Points closer than this (in tile units of 4096, 40 px of a 512 px tile) make one cluster.
export const CLUSTER_RADIUS = 320
// Simplification tolerance in tile units (geojson-vt's default of 3 on a 4096 grid).
const TOLERANCE = 3
// Web Mercator's latitude limit: the world's tiles end there.
export const MAX_MERCATOR_LAT = 85.0511287798066

/** A placemark as a tile shows it: its id, name, geometry type, innermost folder and geometry. */
export interface TilePlacemark {
  id: number
  name: string
  geometry_type: 'Point' | 'LineString' | 'Polygon'
  /** The innermost folder's name; null at the root (no `folder` property then). */
  folder: string | null
  geometry: Geometry
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
export function tileReadBox (z: number, x: number, y: number, margin = Math.max(TILE_BUFFER, CLUSTER_RADIUS)): Box {
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
  return props
}

function feature (p: TilePlacemark): GeoJSON.Feature {
  return { type: 'Feature', id: p.id, properties: propertiesOf(p), geometry: p.geometry as GeoJSON.Geometry }
}

// Points of Web Mercator beyond its latitude limit fall in no tile.
const inMercator = (p: TilePlacemark): boolean => p.geometry.type !== 'Point' || Math.abs(p.geometry.coordinates[1]) <= MAX_MERCATOR_LAT

/**
 * Tile z/x/y's features (in tile coordinates of TILE_EXTENT), from the placemarks of its read box
 * (tileReadBox). Below `clusterMaxZoom` points are clustered: a group of points within CLUSTER_RADIUS
 * is one point feature with `cluster: true`, `point_count` and `point_count_abbreviated` (no id), a
 * point alone stays itself. Lines and polygons are clipped to the tile and its buffer and simplified
 * for the zoom (none at the highest zoom).
 */
export function tileFeatures (placemarks: TilePlacemark[], z: number, x: number, y: number, clusterMaxZoom: number): GeoJSONVTFeature[] {
  const clustering = z < clusterMaxZoom
  const shapes: GeoJSON.Feature[] = []
  const points: PointFeature<Properties>[] = []
  for (const p of placemarks) {
    if (!inMercator(p)) continue
    if (clustering && p.geometry.type === 'Point') points.push({ type: 'Feature', properties: propertiesOf(p), geometry: p.geometry as GeoJSON.Point })
    else shapes.push(feature(p))
  }
  const out: GeoJSONVTFeature[] = []
  if (shapes.length > 0) {
    const tile = geoJSONToTile({ type: 'FeatureCollection', features: shapes }, z, x, y, {
      extent: TILE_EXTENT, buffer: TILE_BUFFER, tolerance: TOLERANCE, maxZoom: MAX_TILE_ZOOM, clip: true, wrap: false
    })
    out.push(...tile.features)
  }
  if (points.length > 0) {
    // Clusters of this zoom only: the index is built for the one zoom asked.
    const index = new Supercluster<Properties, Properties>({ minZoom: z, maxZoom: z, radius: CLUSTER_RADIUS, extent: TILE_EXTENT, minPoints: 2 })
    index.load(points)
    for (const f of index.getTile(z, x, y)?.features ?? []) {
      const tags = f.tags as (Properties & { cluster?: boolean }) | null | undefined
      if (tags?.cluster === true) {
        out.push({ type: 1, geometry: f.geometry, tags: { cluster: true, point_count: tags.point_count as number, point_count_abbreviated: String(tags.point_count_abbreviated) } })
      } else {
        out.push({ type: 1, id: tags?.id as number, geometry: f.geometry, tags: tags ?? {} })
      }
    }
  }
  return out
}

/** Tile z/x/y as Mapbox Vector Tile bytes (one layer, `placemarks`, version 2), or null when it has no feature. */
export function buildTile (placemarks: TilePlacemark[], z: number, x: number, y: number, clusterMaxZoom: number): Buffer | null {
  const features = tileFeatures(placemarks, z, x, y, clusterMaxZoom)
  if (features.length === 0) return null
  const layer = { features } as unknown as GeoJSONVTTile
  const bytes = fromGeojsonVt({ [TILE_LAYER]: layer }, { version: TILE_LAYER_VERSION, extent: TILE_EXTENT })
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** The fields of the layer's features, as TileJSON's vector_layers lists them. */
export const TILE_FIELDS: Record<string, string> = {
  id: 'Number: the placemark\'s id (also the feature id)',
  name: 'String: the placemark\'s name',
  geometry_type: 'String: Point, LineString or Polygon',
  folder: 'String: the innermost folder\'s name (absent at the root)',
  cluster: 'Boolean: true on a cluster of points (zooms below TILE_CLUSTER_MAX_ZOOM)',
  point_count: 'Number: how many placemarks a cluster holds',
  point_count_abbreviated: 'String: point_count shortened (1.2k)'
}

interface SummaryFields { id: number; name: string; geometry_type: TilePlacemark['geometry_type']; folder_path: string[]; geometry: string }

/**
 * The placemarks of serialized summaries (the box query's bytes, from the index or the database) as
 * tiles show them.
 */
export function tilePlacemarks (summaries: { count: number; byteLength: number; copyTo(target: Buffer, offset: number): void }): TilePlacemark[] {
  if (summaries.count === 0) return []
  const text = Buffer.allocUnsafe(summaries.byteLength + 2)
  text[0] = 0x5b
  summaries.copyTo(text, 1)
  text[text.length - 1] = 0x5d
  const rows = JSON.parse(text.toString('utf8')) as SummaryFields[]
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    geometry_type: r.geometry_type,
    folder: r.folder_path.length > 0 ? r.folder_path[r.folder_path.length - 1] : null,
    geometry: JSON.parse(r.geometry) as Geometry
  }))
}
