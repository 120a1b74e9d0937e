/**
 * Exact tiles: at every cluster zoom, over a set of tiles, the clusters' point_counts plus the lone
 * points equal the Point placemarks whose coordinates fall in those tiles, each placemark in one
 * feature of one tile, points on tile edges, at ±180° and at Web Mercator's latitude limits included;
 * from the in-memory index and from the database alike. Tiles carry the resolved KML style and time,
 * take the folder, q and datetime filters, and a world tile stays cheap.
 */
import t from 'tap'
import { Readable } from 'node:stream'
import { VectorTile } from '@mapbox/vector-tile'
import { PbfReader } from 'pbf'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { mulberry32 } from '../../scripts/generate-kml.ts'

const MAX_LAT = 85.0511287798066
const RED = 'ff0000ff' // KML aabbggrr: opaque red
const BLUE = '80ff0000' // half-transparent blue
const GREEN = 'ff00ff00'

interface Point { id: number; lon: number; lat: number }

/** The tile of zoom z a position falls in (west and north edges inclusive; 180° E and the south limit in the last column and row). */
function tileOf (lon: number, lat: number, z: number): [number, number] | null {
  if (Math.abs(lat) > MAX_LAT) return null
  const n = 2 ** z
  const r = (lat * Math.PI) / 180
  const fx = ((lon + 180) / 360) * 2 ** 26
  const fy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * 2 ** 26
  const clamp = (v: number) => Math.min(2 ** 26 - 1, Math.max(0, Math.floor(v)))
  return [Math.floor(clamp(fx) / (2 ** 26 / n)), Math.floor(clamp(fy) / (2 ** 26 / n))]
}

const tileLon = (x: number, z: number) => (x / 2 ** z) * 360 - 180
const tileLat = (y: number, z: number) => (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / 2 ** z))) * 180) / Math.PI

/** The dataset: points in a few dense places and over the world, points on tile edges and at the limits, a few lines and polygons, styles and times. */
function datasetKml (count: number): { kml: string; positions: [number, number][] } {
  const rand = mulberry32(7)
  const positions: [number, number][] = []
  const places: [number, number, number][] = [[-115.17, 36.11, 0.4], [2.35, 48.86, 0.3], [139.69, 35.69, 0.5], [151.21, -33.87, 0.2], [179.9, -18.1, 0.1]]
  for (let k = 0; k < count; k++) {
    if (k % 10 === 0) positions.push([(rand() - 0.5) * 360, (rand() - 0.5) * 170])
    else {
      const [lon, lat, spread] = places[k % places.length]
      positions.push([Math.max(-180, Math.min(180, lon + (rand() - 0.5) * spread)), lat + (rand() - 0.5) * spread])
    }
  }
  // On tile edges and corners at several zooms, around Las Vegas and the origin.
  for (const z of [1, 3, 5, 8, 10, 13]) {
    for (const [lon, lat] of [[-115.17, 36.11], [0, 0], [2.35, 48.86]]) {
      const [x, y] = tileOf(lon, lat, z)!
      for (let dx = 0; dx <= 1; dx++) for (let dy = 0; dy <= 1; dy++) positions.push([tileLon(x + dx, z), tileLat(y + dy, z)], [tileLon(x + dx, z), lat], [lon, tileLat(y + dy, z)])
    }
  }
  // The world's edges: the antimeridian, the latitude limits, a point past them (in no tile), the corners.
  positions.push([180, 0], [-180, 0], [180, 10], [-180, -10], [0, MAX_LAT], [0, -MAX_LAT], [100, 85.06], [-100, -86],
    [180, MAX_LAT], [-180, -MAX_LAT], [180, -MAX_LAT], [-180, MAX_LAT], [0, 0], [0, 0])
  let kml = '<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n'
  kml += `<Style id="red"><IconStyle><color>${RED}</color><Icon><href>https://example.org/red.png</href></Icon></IconStyle></Style>\n`
  kml += `<Style id="blue-normal"><IconStyle><color>${BLUE}</color></IconStyle><LineStyle><color>${GREEN}</color><width>3</width></LineStyle><PolyStyle><color>${BLUE}</color></PolyStyle></Style>\n`
  kml += '<Style id="blue-highlight"><IconStyle><color>ffffffff</color></IconStyle></Style>\n'
  kml += '<StyleMap id="blue"><Pair><key>normal</key><styleUrl>#blue-normal</styleUrl></Pair><Pair><key>highlight</key><styleUrl>#blue-highlight</styleUrl></Pair></StyleMap>\n'
  kml += '<Style id="plain"><LabelStyle><scale>1</scale></LabelStyle></Style>\n'
  const styles = ['red', 'red', 'red', 'blue', 'plain', '']
  positions.forEach(([lon, lat], k) => {
    const folder = k % 2 === 0 ? 'Even' : 'Odd'
    const style = styles[k % styles.length]
    const time = k % 3 === 0 ? `<TimeStamp><when>2017-10-0${1 + (k % 9)}T12:00:00Z</when></TimeStamp>` : ''
    const name = k % 7 === 0 ? `Beacon ${k}` : `Place ${k}`
    kml += `<Folder><name>${folder}</name><Placemark><name>${name}</name>${style ? `<styleUrl>#${style}</styleUrl>` : ''}${time}<Point><coordinates>${lon},${lat},0</coordinates></Point></Placemark></Folder>\n`
  })
  // Lines and polygons around Las Vegas, styled.
  for (let k = 0; k < 20; k++) {
    const lon = -115.3 + k * 0.01
    kml += `<Placemark><name>Road ${k}</name><styleUrl>#blue</styleUrl><TimeSpan><begin>2017-10-01</begin><end>2017-10-02</end></TimeSpan><LineString><coordinates>${lon},36.0,0 ${lon + 0.02},36.2,0</coordinates></LineString></Placemark>\n`
    kml += `<Placemark><name>Zone ${k}</name><styleUrl>#blue</styleUrl><Polygon><outerBoundaryIs><LinearRing><coordinates>${lon},36.1,0 ${lon + 0.005},36.1,0 ${lon + 0.005},36.105,0 ${lon},36.1,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>\n`
  }
  kml += '</Document></kml>\n'
  return { kml, positions }
}

interface Feature { id: number | undefined; type: number; properties: Record<string, unknown> }

function decode (body: Buffer): Feature[] {
  if (body.length === 0) return []
  const layer = new VectorTile(new PbfReader(body)).layers.placemarks
  const out: Feature[] = []
  for (let i = 0; i < layer.length; i++) {
    const f = layer.feature(i)
    out.push({ id: f.id, type: f.type, properties: { ...f.properties } })
  }
  return out
}

/**
 * The points counted over these tiles: the sum of point_counts and lone points, and the ids of the lone
 * ones; and the lines and polygons: the sum of shape_counts, and the ids of those drawn.
 */
async function countTiles (app: FastifyInstance, z: number, tiles: Iterable<string>, query = '') {
  let total = 0
  const ids: number[] = []
  let shapes = 0
  const shapeIds: number[] = []
  for (const key of tiles) {
    const [x, y] = key.split('/')
    const res = await app.inject(`/api/v1/tiles/${z}/${x}/${y}.mvt${query}`)
    if (res.statusCode === 204) continue
    for (const f of decode(res.rawPayload)) {
      if (f.properties.shape_count !== undefined) shapes += f.properties.shape_count as number
      else if (f.properties.cluster === true) total += f.properties.point_count as number
      else if (f.properties.geometry_type !== 'Point') shapeIds.push(f.id!)
      else {
        total++
        ids.push(f.id!)
      }
    }
  }
  return { total, ids, shapes, shapeIds }
}

/** A line's or polygon's bounds on the grid (lib/geo/tile-grid.ts): the larger side in cells of 2^26 a side. */
function gridSpan (coordinates: [number, number][]): number {
  const cells = coordinates.map(([lon, lat]) => {
    const r = (lat * Math.PI) / 180
    return [Math.floor(((lon + 180) / 360) * 2 ** 26), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * 2 ** 26)]
  })
  const side = (k: number) => Math.max(...cells.map((c) => c[k])) - Math.min(...cells.map((c) => c[k]))
  return Math.max(side(0), side(1))
}

t.test('exact tiles, styles, times and filters', async (t) => {
  const { kml, positions } = datasetKml(8000)
  const handle = await openTestDatabase(t, process.env.EXACT_DB === 'pglite' ? 'pglite' : 'postgres')
  await importPlacemarks(handle, Readable.from([kml]), { timeZone: 'UTC', source: 'exact.kml' })
  // On PostgreSQL the index is built by its own process (its grid read back with it), as a large dataset's is.
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1_000_000, BBOX_INDEX_WORKER_MIN: 0 })
  await app.boxIndex.idle()
  t.equal(app.boxIndex.state(), 'ready')
  // Ids follow the document order from 1: the points first.
  const points: Point[] = positions.map(([lon, lat], k) => ({ id: k + 1, lon, lat }))
  // Then the lines and polygons, a road and a zone in turn.
  const shapesLaid = Array.from({ length: 40 }, (_, k) => {
    const lon = -115.3 + Math.floor(k / 2) * 0.01
    const coordinates: [number, number][] = k % 2 === 0 ? [[lon, 36.0], [lon + 0.02, 36.2]] : [[lon, 36.1], [lon + 0.005, 36.1], [lon + 0.005, 36.105], [lon, 36.1]]
    return { id: points.length + 1 + k, coordinates }
  })
  const shown = points.filter((p) => tileOf(p.lon, p.lat, 0) !== null)
  t.equal(shown.length, points.length - 2, 'two points beyond the latitude limits')

  const expected = (z: number, keep: (p: Point) => boolean = () => true) => {
    const tiles = new Map<string, number>()
    for (const p of shown) {
      if (!keep(p)) continue
      const [x, y] = tileOf(p.lon, p.lat, z)!
      tiles.set(`${x}/${y}`, (tiles.get(`${x}/${y}`) ?? 0) + 1)
    }
    return tiles
  }
  // Every tile of a zoom.
  const world = (z: number) => {
    const out: string[] = []
    for (let x = 0; x < 2 ** z; x++) for (let y = 0; y < 2 ** z; y++) out.push(`${x}/${y}`)
    return out
  }

  for (const [label, app2] of [['the index', app], ['the database', await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1_000_000, BBOX_INDEX_MB: 0 })]] as const) {
    t.test(`every point once over the world's tiles, from ${label}`, async (t) => {
      for (const z of label === 'the index' ? [0, 1, 2, 3] : [0, 2]) {
        const { total, ids, shapes, shapeIds } = await countTiles(app2, z, world(z))
        t.equal(total, shown.length, `zoom ${z}: ${total} points over the ${4 ** z} tiles`)
        t.equal(new Set(ids).size, ids.length, `zoom ${z}: each lone point once`)
        // The 40 lines and polygons, each smaller than a cell at these zooms: in the clusters of shapes or alone, once.
        t.equal(shapes + shapeIds.length, 40, `zoom ${z}: ${shapes} lines and polygons in clusters, ${shapeIds.length} alone`)
        t.equal(new Set(shapeIds).size, shapeIds.length, `zoom ${z}: each lone shape once`)
      }
      // Filtered: the folder and the text search.
      const keep = (p: Point) => (p.id - 1) % 2 === 0 && (p.id - 1) % 7 === 0
      const { total, ids } = await countTiles(app2, 2, world(2), '?folder=Even&q=beacon')
      t.equal(total, shown.filter(keep).length, `folder=Even&q=beacon: ${total} points`)
      t.ok(ids.every((id) => keep(points[id - 1])), 'only matching lone points')
    })
  }

  t.test('every point once over a city\'s tiles at zooms 8 to 13, each tile exact, edges included', async (t) => {
    for (const z of [8, 10, 13]) {
      // A window of tiles around Las Vegas (for 13, the tiles around the edge points).
      const [cx, cy] = tileOf(-115.17, 36.11, z)!
      const r = z === 13 ? 2 : 3
      const window = new Set<string>()
      for (let x = cx - r; x <= cx + r; x++) for (let y = cy - r; y <= cy + r; y++) window.add(`${x}/${y}`)
      const tiles = expected(z)
      let want = 0
      for (const key of window) want += tiles.get(key) ?? 0
      let total = 0
      const ids: number[] = []
      let shapeCounted = 0
      const shapeDrawn = new Map<number, string[]>()
      // Each tile exact, every lone point in the tile its coordinates fall in.
      for (const key of window) {
        const [x, y] = key.split('/').map(Number)
        const res = await app.inject(`/api/v1/tiles/${z}/${x}/${y}.mvt`)
        const all = decode(res.rawPayload)
        const features = all.filter((f) => f.properties.geometry_type === 'Point' || f.properties.point_count !== undefined)
        const count = features.reduce((n, f) => n + ((f.properties.point_count as number | undefined) ?? 1), 0)
        for (const f of all) {
          if (f.properties.shape_count !== undefined) shapeCounted += f.properties.shape_count as number
          else if (f.id !== undefined && f.properties.geometry_type !== 'Point') (shapeDrawn.get(f.id) ?? shapeDrawn.set(f.id, []).get(f.id)!).push(key)
        }
        total += count
        if (count !== (tiles.get(key) ?? 0)) t.fail(`zoom ${z} tile ${key}: ${count}, expected ${tiles.get(key) ?? 0}`)
        for (const f of features) {
          if (f.id === undefined) continue
          ids.push(f.id)
          const p = points[f.id - 1]
          const at = tileOf(p.lon, p.lat, z)!
          if (`${at[0]}/${at[1]}` !== key) t.fail(`zoom ${z}: point ${f.id} in ${key}, not in its own tile ${at.join('/')}`)
        }
      }
      t.equal(total, want, `zoom ${z}: ${total} points in ${window.size} tiles`)
      t.equal(new Set(ids).size, ids.length, `zoom ${z}: each lone point once`)
      // The lines and polygons: smaller than a cell at this zoom (2^(22 − z) cells of 2^26), each counted once,
      // in a cluster of shapes or alone in one tile; larger, drawn in every tile they cross and in no cluster.
      const small = shapesLaid.filter((s) => gridSpan(s.coordinates) < 2 ** (22 - z))
      const lone = small.filter((s) => shapeDrawn.has(s.id))
      t.equal(shapeCounted + lone.length, small.length, `zoom ${z}: the ${small.length} lines and polygons smaller than a cell, ${shapeCounted} in clusters`)
      t.ok(lone.every((s) => shapeDrawn.get(s.id)!.length === 1), `zoom ${z}: each lone small shape in one tile`)
      // The larger ones within the window's tiles.
      const [west, east, north, south] = [tileLon(cx - r, z), tileLon(cx + r + 1, z), tileLat(cy - r, z), tileLat(cy + r + 1, z)]
      const large = shapesLaid.filter((s) => !small.includes(s) && s.coordinates.every(([lon, lat]) => lon > west && lon < east && lat < north && lat > south))
      t.ok(large.every((s) => shapeDrawn.has(s.id)), `zoom ${z}: the ${large.length} larger ones drawn`)
      if (z === 8) t.ok(small.length > 0 && large.length > 0, 'both kinds at zoom 8')
    }
  })

  t.test('the antimeridian and the latitude limits', async (t) => {
    for (const z of [2, 6, 12]) {
      const n = 2 ** z
      // The last column holds 180° E; the first -180°; the first and last rows the limits.
      for (const [lon, lat] of [[180, 0], [-180, 0], [0, MAX_LAT], [0, -MAX_LAT], [180, MAX_LAT], [-180, -MAX_LAT]]) {
        const [x, y] = tileOf(lon, lat, z)!
        t.ok(x >= 0 && x < n && y >= 0 && y < n)
        const ids = points.filter((p) => p.lon === lon && p.lat === lat).map((p) => p.id)
        const features = decode((await app.inject(`/api/v1/tiles/${z}/${x}/${y}.mvt`)).rawPayload)
        const lone = new Set(features.map((f) => f.id))
        const clustered = features.filter((f) => f.properties.cluster === true).reduce((s, f) => s + (f.properties.point_count as number), 0)
        t.ok(ids.every((id) => lone.has(id)) || clustered > 0, `zoom ${z}: ${lon},${lat} in tile ${x}/${y}`)
      }
    }
  })

  t.test('style and time attributes, on points, lines, polygons and clusters', async (t) => {
    const z = 16
    const [x, y] = tileOf(-115.29, 36.1, z)!
    let features: Feature[] = []
    for (let dx = -2; dx <= 2 && !features.some((f) => f.properties.geometry_type === 'Polygon'); dx++) {
      const res = await app.inject(`/api/v1/tiles/${z}/${x + dx}/${y}.mvt`)
      features = decode(res.rawPayload)
    }
    const polygon = features.find((f) => f.properties.geometry_type === 'Polygon')
    t.ok(polygon, 'a polygon')
    t.match(polygon!.properties, { color: '#00ff00ff', fill: '#0000ff80', width: 3 }, 'a StyleMap\'s normal pair: line colour, fill, width')
    const line = decode((await app.inject(`/api/v1/tiles/12/${tileOf(-115.29, 36.1, 12)!.join('/')}.mvt`)).rawPayload).find((f) => f.properties.geometry_type === 'LineString')!
    t.same([line.properties.color, line.properties.width, line.properties.fill], ['#00ff00ff', 3, undefined], 'a line: its colour and width, no fill')
    t.equal(line.properties.time_begin, Date.parse('2017-10-01T00:00:00Z'), 'time_begin in ms')
    t.equal(line.properties.time_end, Date.parse('2017-10-02T23:59:59.999Z'), 'time_end in ms')

    // Lone points at zoom 14 (no clusters): each with its style and time, as the GeoJSON answer's style.
    const [px, py] = tileOf(-115.17, 36.11, 14)!
    const lone = decode((await app.inject(`/api/v1/tiles/14/${px}/${py}.mvt`)).rawPayload).filter((f) => f.properties.geometry_type === 'Point').slice(0, 12)
    t.ok(lone.length > 0)
    for (const f of lone) {
      const k = f.id! - 1
      const style = ['red', 'red', 'red', 'blue', 'plain', ''][k % 6]
      const want = style === 'red' ? { color: '#ff0000ff', icon: 'https://example.org/red.png' } : style === 'blue' ? { color: '#0000ff80' } : {}
      const { color, icon, fill, width } = f.properties
      t.same(JSON.parse(JSON.stringify({ color, icon, fill, width })), want, `point ${f.id}: style ${style || 'none'}`)
      t.equal(f.properties.time_begin, k % 3 === 0 ? Date.parse(`2017-10-0${1 + (k % 9)}T12:00:00Z`) : undefined, `point ${f.id}: time`)
      const geojson = (await app.inject(`/api/v1/placemarks/${f.id}?format=geojson`)).json()
      t.same(geojson.properties.style, want, `point ${f.id}: the GeoJSON style`)
    }
    // A cluster: the colour most of its points share (red: three of every six).
    const clusters = decode((await app.inject(`/api/v1/tiles/6/${tileOf(-115.17, 36.11, 6)!.join('/')}.mvt`)).rawPayload).filter((f) => f.properties.cluster === true)
    const big = clusters.sort((a, b) => (b.properties.point_count as number) - (a.properties.point_count as number))[0]
    t.ok((big.properties.point_count as number) > 100)
    t.equal(big.properties.color, '#ff0000ff', 'the cluster\'s colour')
    // The list's GeoJSON carries the same style object.
    const list = (await app.inject('/api/v1/placemarks?format=geojson&limit=6')).json()
    t.same(list.features.map((f: { properties: { style: object } }) => f.properties.style),
      [{ color: '#ff0000ff', icon: 'https://example.org/red.png' }, { color: '#ff0000ff', icon: 'https://example.org/red.png' }, { color: '#ff0000ff', icon: 'https://example.org/red.png' }, { color: '#0000ff80' }, {}, {}])
  })

  t.test('filters: folder, q and datetime, exact, each its own cache entry; TileJSON carries them', async (t) => {
    const timeOf = (p: Point) => ((p.id - 1) % 3 === 0 ? Date.parse(`2017-10-0${1 + ((p.id - 1) % 9)}T12:00:00Z`) : null)
    const cases: [string, (p: Point) => boolean][] = [
      ['folder=Even', (p) => (p.id - 1) % 2 === 0],
      ['q=beacon', (p) => (p.id - 1) % 7 === 0],
      ['datetime=2017-10-04', (p) => { const ms = timeOf(p); return ms !== null && ms >= Date.parse('2017-10-04') && ms < Date.parse('2017-10-05') }],
      ['folder=Odd&q=beacon&datetime=2017-10-01T00:00:00Z/..', (p) => (p.id - 1) % 2 === 1 && (p.id - 1) % 7 === 0 && timeOf(p) !== null]
    ]
    for (const [query, keep] of cases) {
      for (const z of [0, 2]) {
        let want = 0
        for (const n of expected(z, keep).values()) want += n
        const { total, ids } = await countTiles(app, z, world(z), `?${query}`)
        t.equal(total, want, `${query}, zoom ${z}: ${total} points`)
        t.ok(ids.every((id) => keep(points[id - 1])), `${query}, zoom ${z}: only matching lone points`)
      }
    }
    const plain = await app.inject('/api/v1/tiles/0/0/0.mvt')
    const even = await app.inject('/api/v1/tiles/0/0/0.mvt?folder=Even')
    t.not(plain.headers.etag, even.headers.etag, 'a filtered tile is its own entry')
    t.notSame(plain.rawPayload, even.rawPayload)
    t.equal((await app.inject('/api/v1/tiles/0/0/0.mvt?folder=Nowhere')).statusCode, 204, 'nothing matches: 204')
    const bad = await app.inject('/api/v1/tiles/0/0/0.mvt?datetime=yesterday')
    t.equal(bad.statusCode, 400)
    t.match(bad.json(), { error: 'Bad Request', message: /datetime/ })
    const doc = (await app.inject('/api/v1/tiles.json?folder=Even&q=beacon')).json()
    t.same(doc.tiles, [`${app.config.PUBLIC_URL}/api/v1/tiles/{z}/{x}/{y}.mvt?folder=Even&q=beacon`])
  })

  t.test('a world tile costs its grid, not its points', async (t) => {
    const index = app.boxIndex.index()!
    const started = performance.now()
    let cells = 0
    for (let k = 0; k < 20; k++) cells += index.grid.cells(0, 0, 0).points.length
    const perTile = (performance.now() - started) / 20
    t.ok(cells / 20 <= 256, `${cells / 20} cells`)
    t.ok(perTile < 20, `the world's grid in ${perTile.toFixed(2)} ms`)
    // The first answer of a world tile, cold (a filter not asked before).
    const cold = performance.now()
    t.equal((await app.inject('/api/v1/tiles/0/0/0.mvt?q=place')).statusCode, 200)
    t.ok(performance.now() - cold < 1000, `a filtered world tile, cold, in ${(performance.now() - cold).toFixed(0)} ms`)
  })
})
