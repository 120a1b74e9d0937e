/**
 * The tiles' layer encoding (lib/geo/mvt.ts) against vt-pbf's fromGeojsonVt, the library it stands in
 * for on the hot path: the same bytes for the same features, over what the tiles hold (placemarks with
 * their properties, clusters, clipped lines and polygons) and over the edges of geojson-vt's feature
 * type (ids as strings or NaN, null and non-primitive values, 1 beside '1', open and closed rings).
 */
import t from 'tap'
import { fromGeojsonVt } from '@maplibre/vt-pbf'
import type { GeoJSONVTFeature, GeoJSONVTTile } from '@maplibre/geojson-vt'
import { encodeTile } from '../../lib/geo/mvt.ts'
import { tileFeatures, TILE_EXTENT, TILE_LAYER, TILE_LAYER_VERSION, type TilePlacemark } from '../../lib/geo/tiles.ts'
import { mulberry32 } from '../../lib/random.ts'

const OPTIONS = { version: TILE_LAYER_VERSION, extent: TILE_EXTENT }

// The bytes as base64: compared as strings, exactly.
const library = (features: GeoJSONVTFeature[], options = OPTIONS) =>
  Buffer.from(fromGeojsonVt({ [TILE_LAYER]: { features } as unknown as GeoJSONVTTile }, options)).toString('base64')
const ours = (features: GeoJSONVTFeature[], options = OPTIONS) => Buffer.from(encodeTile(TILE_LAYER, features, options)).toString('base64')

// Placemarks around one tile's area (z 10, x 184, y 401: Las Vegas), points, lines and polygons, with
// styles, folders and times drawn from small sets so that values repeat.
function placemarks (count: number, seed: number): TilePlacemark[] {
  const rand = mulberry32(seed)
  const pick = <T> (list: T[]) => list[Math.floor(rand() * list.length)]
  const lon = () => -115.3 + rand() * 0.35
  const lat = () => 36.0 + rand() * 0.3
  return Array.from({ length: count }, (_, i): TilePlacemark => {
    const kind = pick(['Point', 'Point', 'Point', 'LineString', 'Polygon'] as const)
    const start: [number, number] = [lon(), lat()]
    const geometry = kind === 'Point'
      ? { type: 'Point' as const, coordinates: start }
      : kind === 'LineString'
        ? { type: 'LineString' as const, coordinates: [start, [start[0] + 0.05, start[1] + 0.02], [start[0] + 0.3, start[1] - 0.1]] as [number, number][] }
        : { type: 'Polygon' as const, coordinates: [[start, [start[0] + 0.2, start[1]], [start[0] + 0.2, start[1] + 0.1], start]] as [number, number][][] }
    const begin = pick([null, 1_506_900_000_000, 1_506_900_000_000 + i * 1000, -86_400_000])
    return {
      id: 1 + i,
      name: pick([`Placemark ${i}`, 'Shared name', '1', '', 'Ünïcødé ✓']),
      geometry_type: kind,
      folder: pick([null, 'Victims', 'Las Vegas Strip']),
      geometry,
      style: pick([{}, { color: '#ff0000ff' }, { color: '#00ff00ff', width: 2.5, fill: '#0000ff80' }, { icon: 'images/icon-1.png', color: '#ffffffff' }]),
      time_begin: begin,
      time_end: begin === null ? null : pick([null, begin + 60_000])
    }
  })
}

t.test('the tiles\' own features are encoded as vt-pbf encodes them', async (t) => {
  for (const seed of [1, 2, 3]) {
    const list = placemarks(400, seed)
    for (const [z, x, y] of [[10, 184, 401], [9, 92, 200], [12, 737, 1605], [14, 2950, 6428]]) {
      const clusters = [{ count: 12, x: 100, y: 200, color: '#ff0000ff', item: 1 }, { count: 12_345, x: -3, y: 4099, color: null, item: 2 }]
      const features = tileFeatures({ drawn: list.slice(0, 200), lone: list.slice(200), clusters, shapeClusters: [{ count: 2, x: 5, y: 5, color: null, item: 3 }] }, z, x, y)
      t.ok(features.length > 0)
      t.equal(ours(features), library(features), `seed ${seed}, tile ${z}/${x}/${y}: ${features.length} features`)
    }
  }
})

t.test('the edges of a feature: ids, values, rings, options', async (t) => {
  const features = [
    { type: 1, id: 7, tags: { a: 1, b: '1', c: true, d: false, e: null, f: undefined, g: 1.5, h: -3, i: -0, j: 0, k: NaN, l: Infinity, m: 2 ** 40 }, geometry: [[1, 2], [3, 4], [-5, -6]] },
    { type: 1, id: '42abc', tags: { a: 1, b: { nested: [1, 2] }, n: '{"nested":[1,2]}' }, geometry: [[0, 0]] },
    { type: 1, id: NaN, tags: null, geometry: [[10, 10]] },
    { type: 1, tags: {}, geometry: [[4096, 4096]] },
    { type: 2, id: 0, tags: { a: 'x' }, geometry: [[[0, 0], [10, 0], [10, 10]], [[-64, -64], [4160, 4160]]] },
    { type: 3, id: 3, tags: { c: true }, geometry: [[[0, 0], [100, 0], [100, 100], [0, 0]], [[10, 10], [20, 10], [20, 20]]] },
    { type: 3, tags: { c: false }, geometry: [[[5, 5]]] }
  ] as unknown as GeoJSONVTFeature[]
  t.equal(ours(features), library(features))
  t.equal(ours([]), library([]), 'a layer of no feature')
  t.equal(ours(features, { version: 1, extent: 512 }), library(features, { version: 1, extent: 512 }), 'another version and extent')
})
