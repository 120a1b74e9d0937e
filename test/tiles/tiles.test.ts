import t, { type Test } from 'tap'
import { gunzipSync } from 'node:zlib'
import { VectorTile, type VectorTileLayer } from '@mapbox/vector-tile'
import { PbfReader } from 'pbf'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, dbKinds, openTestDatabase } from '../helper.ts'

// The sample's Las Vegas placemarks (around -115.17, 36.1) and its points around the world.
const VEGAS_14 = '/api/v1/tiles/14/2950/6428.mvt'
const VEGAS_10 = '/api/v1/tiles/10/184/401.mvt'
// Far south in the Pacific: nothing there.
const EMPTY = '/api/v1/tiles/5/1/30.mvt'

function layerOf (body: Buffer): VectorTileLayer {
  const tile = new VectorTile(new PbfReader(body))
  return tile.layers.placemarks
}

interface Decoded { id: number | undefined; type: number; properties: Record<string, unknown>; geometry: { x: number; y: number }[][] }

function decode (body: Buffer): Decoded[] {
  const layer = layerOf(body)
  const out: Decoded[] = []
  for (let i = 0; i < layer.length; i++) {
    const f = layer.feature(i)
    out.push({ id: f.id, type: f.type, properties: { ...f.properties }, geometry: f.loadGeometry().map((ring) => ring.map((p) => ({ x: p.x, y: p.y }))) })
  }
  return out
}

/** Tile and in-tile position (of 4096) of a lon/lat at zoom z, rows from the north. */
function tilePosition (lon: number, lat: number, z: number) {
  const n = 2 ** z
  const fx = ((lon + 180) / 360) * n
  const r = (lat * Math.PI) / 180
  const fy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n
  const x = Math.floor(fx)
  const y = Math.floor(fy)
  return { x, y, px: Math.round((fx - x) * 4096), py: Math.round((fy - y) * 4096) }
}

async function tileChecks (t: Test, app: FastifyInstance) {
  t.test('layer, version, extent and properties', async (t) => {
    const res = await app.inject(VEGAS_14)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'application/vnd.mapbox-vector-tile')
    const tile = new VectorTile(new PbfReader(res.rawPayload))
    t.same(Object.keys(tile.layers), ['placemarks'], 'one layer, placemarks')
    const layer = tile.layers.placemarks
    t.equal(layer.version, 2)
    t.equal(layer.extent, 4096)
    t.ok(layer.length > 0)
    const features = decode(res.rawPayload)
    for (const f of features) {
      t.equal(typeof f.properties.id, 'number', 'id')
      t.equal(f.id, f.properties.id, 'the feature id is the placemark id')
      t.equal(typeof f.properties.name, 'string', 'name')
      t.ok(['Point', 'LineString', 'Polygon'].includes(f.properties.geometry_type as string), 'geometry_type')
      t.notOk('point_count' in f.properties, 'no cluster at zoom 14')
    }
    // Each feature's properties are its placemark's, folder the innermost folder name.
    const one = features[0]
    const detail = (await app.inject(`/api/v1/placemarks/${one.id}`)).json()
    const { color, fill, width, icon, time_begin: begin, time_end: end, ...own } = one.properties
    t.same(own, { id: detail.id, name: detail.name, geometry_type: detail.geometry_type, folder: detail.folder_path.at(-1) })
    // Its resolved style and time: the GeoJSON answer's style object and times, as tile attributes.
    const geojson = (await app.inject(`/api/v1/placemarks/${one.id}?format=geojson`)).json()
    t.same(JSON.parse(JSON.stringify({ color, fill, width, icon })), geojson.properties.style, 'the style of the GeoJSON answer')
    t.equal(begin, detail.time_begin === null ? undefined : Date.parse(detail.time_begin), 'time_begin')
    t.equal(end, detail.time_end === null ? undefined : Date.parse(detail.time_end), 'time_end')
    t.equal(one.type, { Point: 1, LineString: 2, Polygon: 3 }[detail.geometry_type as string])
  })

  t.test('a known point where it is, at a high zoom', async (t) => {
    const list = (await app.inject('/api/v1/placemarks?limit=100')).json().placemarks as { id: number; geometry_type: string; geometry: string }[]
    const point = list.find((p) => p.geometry_type === 'Point' && JSON.parse(p.geometry).coordinates[0] < -115)!
    const [lon, lat] = JSON.parse(point.geometry).coordinates as [number, number]
    for (const z of [18, 22]) {
      const at = tilePosition(lon, lat, z)
      const res = await app.inject(`/api/v1/tiles/${z}/${at.x}/${at.y}.mvt`)
      t.equal(res.statusCode, 200, `zoom ${z}`)
      const f = decode(res.rawPayload).find((f) => f.id === point.id)
      t.ok(f, `placemark ${point.id} in its zoom ${z} tile`)
      t.ok(Math.abs(f!.geometry[0][0].x - at.px) <= 1 && Math.abs(f!.geometry[0][0].y - at.py) <= 1,
        `at ${at.px},${at.py} (${f!.geometry[0][0].x},${f!.geometry[0][0].y})`)
    }
  })

  t.test('points clustered below TILE_CLUSTER_MAX_ZOOM, none at or above it', async (t) => {
    const features = decode((await app.inject(VEGAS_10)).rawPayload)
    const clusters = features.filter((f) => f.properties.cluster === true)
    t.ok(clusters.length > 0, 'clusters at zoom 10')
    for (const c of clusters) {
      t.equal(c.type, 1, 'a cluster is a point')
      t.ok(((c.properties.point_count ?? c.properties.shape_count) as number) >= 2, 'point_count or shape_count')
      t.equal(c.id, undefined, 'a cluster has no placemark id')
    }
    const points = features.filter((f) => f.type === 1 && f.properties.shape_count === undefined).reduce((n, f) => n + ((f.properties.point_count as number | undefined) ?? 1), 0)
    t.ok(points > clusters.length, `${points} points in ${clusters.length} clusters and single points`)
    for (const z of [13, 14, 15]) {
      const at = tilePosition(-115.17, 36.1, z)
      const f = decode((await app.inject(`/api/v1/tiles/${z}/${at.x}/${at.y}.mvt`)).rawPayload)
      const clustered = f.some((f) => 'point_count' in f.properties)
      t.equal(clustered, z < 14, `zoom ${z}: ${clustered ? 'clusters' : 'no cluster'}`)
    }
  })

  t.test('an empty tile answers 204', async (t) => {
    const res = await app.inject(EMPTY)
    t.equal(res.statusCode, 204)
    t.equal(res.rawPayload.length, 0)
    t.ok(res.headers.etag, 'with its ETag')
    t.equal((await app.inject({ url: EMPTY, headers: { 'if-none-match': res.headers.etag as string } })).statusCode, 304)
    t.equal((await app.inject(EMPTY)).statusCode, 204, 'from the cache too')
  })

  t.test('ETag, 304 and gzip', async (t) => {
    const plain = await app.inject(VEGAS_14)
    const etag = plain.headers.etag as string
    t.match(etag, /^"\d+-[\w-]+"$/)
    t.equal(plain.headers['cache-control'], 'public, max-age=0, must-revalidate')
    t.match(plain.headers.vary, /accept-encoding/i)
    const again = await app.inject({ url: VEGAS_14, headers: { 'if-none-match': etag } })
    t.equal(again.statusCode, 304)
    t.equal(again.rawPayload.length, 0)
    const zipped = await app.inject({ url: VEGAS_14, headers: { 'accept-encoding': 'gzip' } })
    t.equal(zipped.statusCode, 200)
    t.equal(zipped.headers['content-encoding'], 'gzip')
    t.equal(zipped.headers['content-type'], 'application/vnd.mapbox-vector-tile')
    t.ok(gunzipSync(zipped.rawPayload).equals(plain.rawPayload), 'the same tile, gzipped')
    t.equal((await app.inject({ url: VEGAS_14, headers: { 'accept-encoding': 'gzip', 'if-none-match': zipped.headers.etag as string } })).statusCode, 304)
  })

  t.test('TileJSON', async (t) => {
    const res = await app.inject('/api/v1/tiles.json')
    t.equal(res.statusCode, 200)
    t.ok(res.headers.etag)
    const doc = res.json()
    t.equal(doc.tilejson, '3.0.0')
    t.same(doc.tiles, [`${app.config.PUBLIC_URL}/api/v1/tiles/{z}/{x}/{y}.mvt`])
    t.equal(doc.minzoom, 0)
    t.equal(doc.maxzoom, 22)
    t.equal(doc.scheme, 'xyz')
    t.equal(doc.bounds.length, 4)
    const [w, s, e, n] = doc.bounds as number[]
    t.ok(w <= -115.2 && e >= -115.1 && s <= 36.1 && n >= 36.1, `bounds ${doc.bounds} hold Las Vegas`)
    t.ok(w >= -180 && e <= 180 && s >= -85.0511287798066 && n <= 85.0511287798066, 'within Web Mercator')
    t.equal(doc.vector_layers.length, 1)
    t.equal(doc.vector_layers[0].id, 'placemarks')
    for (const field of ['id', 'name', 'geometry_type', 'folder', 'point_count']) t.ok(doc.vector_layers[0].fields[field], `field ${field}`)
  })

  t.test('bad z, x or y: 400 with {error, message}', async (t) => {
    const digits = 'must be a whole number in plain decimal digits (no sign, leading zero, point, exponent or hex)'
    const cases: [string, string][] = [
      ['/api/v1/tiles/-1/0/0.mvt', `params/z ${digits}`],
      ['/api/v1/tiles/23/0/0.mvt', 'params/z must be <= 22'],
      ['/api/v1/tiles/1.5/0/0.mvt', `params/z ${digits}`],
      ['/api/v1/tiles/1/-1/0.mvt', `params/x ${digits}`],
      ['/api/v1/tiles/1/0/-1.mvt', `params/y ${digits}`],
      ['/api/v1/tiles/1/2/0.mvt', 'params/x must be <= 1 at zoom 1'],
      ['/api/v1/tiles/0/0/1.mvt', 'params/y must be <= 0 at zoom 0'],
      ['/api/v1/tiles/3/0.5/0.mvt', `params/x ${digits}`],
      ['/api/v1/tiles/3/0/x.mvt', `params/y ${digits}`],
      ['/api/v1/tiles/22/4194304/0.mvt', 'params/x must be <= 4194303 at zoom 22']
    ]
    for (const [url, message] of cases) {
      const res = await app.inject(url)
      t.equal(res.statusCode, 400, url)
      t.same(res.json(), { error: 'Bad Request', message }, url)
    }
    t.equal((await app.inject('/api/v1/tiles/0/0/0.mvt?x=1')).statusCode, 400, 'an unknown parameter')
  })
}

for (const kind of dbKinds) {
  t.test(`vector tiles on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, { kind, sample: true })
    const app = await buildTestApp(t, handle)
    await app.boxIndex.idle()
    t.equal(app.boxIndex.state(), 'ready', 'served from the box index')
    await tileChecks(t, app)

    t.test('the database path gives the same tiles as the index', async (t) => {
      const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
      t.equal(database.boxIndex.state(), 'off')
      const urls = ['/api/v1/tiles/0/0/0.mvt', '/api/v1/tiles/1/0/0.mvt', '/api/v1/tiles/1/1/1.mvt', VEGAS_10, VEGAS_14, EMPTY,
        '/api/v1/tiles/12/737/1606.mvt', '/api/v1/tiles/16/11801/25713.mvt']
      for (const url of urls) {
        const a = await app.inject(url)
        const b = await database.inject(url)
        t.equal(b.statusCode, a.statusCode, `${url}: ${a.statusCode}`)
        if (a.statusCode === 200) t.same(decode(b.rawPayload), decode(a.rawPayload), `${url}: the same ${decode(a.rawPayload).length} features`)
      }
      await tileChecks(t, database)
    })

    t.test('TILE_CLUSTER_MAX_ZOOM moves the clustering', async (t) => {
      const never = await buildTestApp(t, handle, { TILE_CLUSTER_MAX_ZOOM: 0 })
      const features = decode((await never.inject('/api/v1/tiles/0/0/0.mvt')).rawPayload)
      t.notOk(features.some((f) => 'point_count' in f.properties), 'no cluster at zoom 0 with 0')
      const always = await buildTestApp(t, handle, { TILE_CLUSTER_MAX_ZOOM: 23 })
      const high = decode((await always.inject(VEGAS_14)).rawPayload)
      const low = decode((await app.inject(VEGAS_14)).rawPayload)
      t.ok(high.some((f) => 'point_count' in f.properties), `with 23: clusters at zoom 14 (${high.length} features, ${low.length} unclustered)`)
    })
  })
}
