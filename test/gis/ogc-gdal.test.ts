import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildTestApp, freePort, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'

// GDAL's OAPIF driver, the one QGIS uses, reading the service over a real loopback port.
const run = promisify(execFile)
const gdal = spawnSync('ogrinfo', ['--version'], { encoding: 'utf8' })
const gdalAbsent = gdal.status === 0 ? false : 'GDAL\'s ogrinfo is not installed (apt-get install gdal-bin; .ci/run installs it)'

interface Feature { type: 'Feature'; id?: number; geometry: unknown; properties: Record<string, unknown> }
interface Collection { features: Feature[] }

t.test('GDAL lists, pages through and filters the placemarks collection', { skip: vegasAbsent || gdalAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildTestApp(t, handle, { PUBLIC_URL: base })
  await app.listen({ port, host: '127.0.0.1' })
  const source = `OAPIF:${base}/ogc`
  const dir = await mkdtemp(join(tmpdir(), 'ogc-gdal-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // GDAL's own HTTP cache off: every command asks the server.
  const env = { ...process.env, GDAL_HTTP_TIMEOUT: '30', CPL_VSIL_CURL_NON_CACHED: '/vsicurl/', GDAL_DISABLE_READDIR_ON_OPEN: 'YES' }
  const ogr2ogr = async (name: string, ...args: string[]): Promise<Feature[]> => {
    const out = join(dir, `${name}.geojson`)
    await run('ogr2ogr', ['-f', 'GeoJSON', out, source, 'placemarks', ...args], { env })
    return (JSON.parse(await readFile(out, 'utf8')) as Collection).features
  }
  const ours = async (url: string): Promise<Feature[]> => ((await app.inject(url)).json() as Collection).features
  const byId = (features: Feature[]) => features.map((f) => f.properties.id as number)

  t.test('ogrinfo lists the layer with its feature count and fields', async (t) => {
    const { stdout } = await run('ogrinfo', ['-ro', '-so', source, 'placemarks'], { env })
    t.match(stdout, /Layer name: placemarks/)
    t.match(stdout, /Feature Count: 545/)
    for (const field of ['id: Integer', 'name: String', 'description: String', 'style_id: String', 'folder_path: StringList', 'geometry_type: String', 'coordinates_raw: String', 'media_links: StringList', 'created_at: DateTime']) {
      t.match(stdout, field)
    }
    const list = await run('ogrinfo', ['-ro', '-q', source], { env })
    t.match(list.stdout, /placemarks/)
  })

  t.test('ogr2ogr pages through every feature, equal to our answers', async (t) => {
    // Pages of 100: six requests following the next links, each a new cached answer.
    const before = app.datasetCache.size
    const features = await ogr2ogr('all', '-oo', 'PAGE_SIZE=100')
    t.ok(app.datasetCache.size - before >= 6, `${app.datasetCache.size - before} new answers: GDAL paged`)
    const expected = await ours('/ogc/collections/placemarks/items?limit=10000')
    t.equal(features.length, 545)
    t.same(byId(features), byId(expected), 'every placemark once, in id order')
    const list = [...await ours('/api/v1/placemarks?limit=1000&format=geojson'), ...await ours('/api/v1/placemarks?limit=1000&offset=1000&format=geojson')]
    t.same(expected, list.map((f) => ({ ...f, properties: { ...f.properties, time_begin: null, time_end: null } })), 'the OGC items are the GeoJSON list, with the KML time (none here)')
    let differing = 0
    for (const [i, feature] of features.entries()) {
      const want = expected[i]
      if (JSON.stringify(feature.geometry) !== JSON.stringify(want.geometry) || JSON.stringify(feature.properties) !== JSON.stringify(want.properties)) {
        if (differing++ < 3) t.same({ geometry: feature.geometry, properties: feature.properties }, { geometry: want.geometry, properties: want.properties }, `placemark ${want.id}`)
      }
    }
    t.equal(differing, 0, 'every feature equals ours, property for property and coordinate for coordinate')
  })

  t.test('a spatial filter gives the placemarks of our box query', async (t) => {
    const features = await ogr2ogr('spat', '-spat', '-115.18', '36.09', '-115.16', '36.11')
    const expected = await ours('/api/v1/spatial/bbox?min_lon=-115.18&min_lat=36.09&max_lon=-115.16&max_lat=36.11&limit=10000&format=geojson')
    t.ok(expected.length > 0 && expected.length < 545, `${expected.length} placemarks in the box`)
    t.same(byId(features), byId(expected))
  })

  t.test('an attribute filter gives the placemarks of our own filters', async (t) => {
    const lines = await ogr2ogr('where', '-where', 'geometry_type = \'LineString\'')
    const expected = await ours('/ogc/collections/placemarks/items?limit=10000&geometry_type=LineString')
    t.ok(expected.length > 0, `${expected.length} lines`)
    t.same(byId(lines), byId(expected))
    const both = await ogr2ogr('both', '-where', 'geometry_type = \'Point\'', '-spat', '-115.18', '36.09', '-115.16', '36.11')
    const points = await ours('/ogc/collections/placemarks/items?limit=10000&geometry_type=Point&bbox=-115.18,36.09,-115.16,36.11')
    t.same(byId(both), byId(points))
  })
})
