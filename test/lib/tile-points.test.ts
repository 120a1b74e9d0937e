import t from 'tap'
import { geoJSONToTile } from '@maplibre/geojson-vt'
import { MAX_TILE_ZOOM, TILE_BUFFER, TILE_EXTENT, tileFeatures, tileLat, tileLon, type TileContent, type TilePlacemark } from '../../lib/geo/tiles.ts'
import { mulberry32 } from '../../lib/random.ts'

// A tile's points are placed without geojson-vt: the same projection, clipping and rounding must give
// the very features geojson-vt gives, on the tile's edges and its buffer's edges too.
const rand = mulberry32(17)
const point = (id: number, lon: number, lat: number): TilePlacemark => ({
  id, name: `p${id}`, geometry_type: 'Point', folder: null, geometry: { type: 'Point', coordinates: [lon, lat] }, style: {}, time_begin: null, time_end: null
})

t.test('points as geojson-vt places them, for random tiles and points on and around their edges', async (t) => {
  let compared = 0
  let kept = 0
  for (let k = 0; k < 3000; k++) {
    const z = Math.floor(rand() * 23)
    const n = 2 ** z
    const x = Math.floor(rand() * n)
    const y = Math.floor(rand() * n)
    const buffer = rand() < 0.5 ? TILE_BUFFER : TILE_EXTENT / 16
    // Points around the tile: inside, on its edges, on its buffer's edges, just beyond.
    const edges = [x - buffer / TILE_EXTENT, x, x + 0.5, x + 1, x + 1 + buffer / TILE_EXTENT]
    const rows = [y - buffer / TILE_EXTENT, y, y + 0.5, y + 1, y + 1 + buffer / TILE_EXTENT]
    const points: TilePlacemark[] = []
    for (let i = 0; i < 12; i++) {
      const ex = rand() < 0.5 ? edges[Math.floor(rand() * edges.length)] : x - 0.1 + rand() * 1.2
      const ey = rand() < 0.5 ? rows[Math.floor(rand() * rows.length)] : y - 0.1 + rand() * 1.2
      const lat = tileLat(ey, z)
      if (Math.abs(lat) > 85.0511287798066) continue
      points.push(point(points.length + 1, Math.max(-180, Math.min(180, tileLon(ex, z))), lat))
    }
    const contents: [TileContent, number][] = [[{ drawn: [], lone: points }, TILE_EXTENT / 16], [{ drawn: points }, TILE_BUFFER]]
    for (const [content, margin] of contents) {
      const ours = tileFeatures(content, z, x, y)
      const theirs = geoJSONToTile({
        type: 'FeatureCollection',
        features: points.map((p) => ({ type: 'Feature', id: p.id, properties: {}, geometry: p.geometry as GeoJSON.Geometry }))
      }, z, x, y, { extent: TILE_EXTENT, buffer: margin, tolerance: 0, maxZoom: MAX_TILE_ZOOM, clip: true, wrap: false }).features
      const shape = (list: { id?: unknown; type: number; geometry: unknown }[]) => JSON.stringify(list.map((f) => [f.id, f.type, f.geometry]))
      if (shape(ours) !== shape(theirs)) return t.fail(`z${z}/${x}/${y}, buffer ${margin}: ${shape(ours)} against geojson-vt's ${shape(theirs)}`)
      kept += ours.length
    }
    compared++
  }
  t.equal(compared, 3000, `3000 tiles, ${kept} points placed as geojson-vt places them`)
})
