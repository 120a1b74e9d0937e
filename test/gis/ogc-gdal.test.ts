import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildTestApp, freePort, importFieldNotes, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'

// GDAL's OAPIF driver (the one QGIS uses) and its GeoJSON driver, reading the service over a real loopback
// port, on the project's own example KMZ (250 placemarks, KML times on most of them).
const run = promisify(execFile)
const gdal = spawnSync('ogrinfo', ['--version'], { encoding: 'utf8' })
const gdalAbsent = gdal.status === 0 ? false : 'GDAL\'s ogrinfo is not installed (apt-get install gdal-bin; .ci/run installs it)'
const PLACEMARKS = 250

interface Feature { type: 'Feature'; id?: number; geometry: unknown; properties: Record<string, unknown> }
interface Collection { features: Feature[] }

// GDAL writes a DateTime back without the milliseconds when they are zero: compared as instants.
const TIMES = ['created_at', 'time_begin', 'time_end']
const comparable = (properties: Record<string, unknown>) => Object.fromEntries(Object.entries(properties)
  .filter(([, v]) => v !== null)
  .map(([k, v]) => [k, TIMES.includes(k) && typeof v === 'string' ? new Date(v.replace(/^(\d{4})\/(\d\d)\/(\d\d) /, '$1-$2-$3T').replace(/\+00$/, 'Z')).toISOString() : v]))

t.test('GDAL lists, pages through and filters the placemarks, typed', { skip: gdalAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importFieldNotes(handle)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildTestApp(t, handle, { PUBLIC_URL: base, RATE_LIMIT_MAX: 100_000 })
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

  t.test('ogrinfo lists the layer with its feature count and typed fields (the times as DateTime)', async (t) => {
    const { stdout } = await run('ogrinfo', ['-ro', '-so', source, 'placemarks'], { env })
    t.match(stdout, /Layer name: placemarks/)
    t.match(stdout, new RegExp(`Feature Count: ${PLACEMARKS}\\b`))
    for (const field of ['id: Integer', 'name: String', 'description: String', 'style_id: String', 'folder_path: StringList', 'geometry_type: String',
      'coordinates_raw: String', 'media_links: StringList', 'created_at: DateTime', 'time_begin: DateTime', 'time_end: DateTime']) {
      t.match(stdout, `${field} `, field)
    }
  })

  t.test('ogr2ogr pages through every feature, equal to our answers', async (t) => {
    const before = app.datasetCache.size
    const features = await ogr2ogr('all', '-oo', 'PAGE_SIZE=100')
    t.ok(app.datasetCache.size - before >= 3, `${app.datasetCache.size - before} new answers: GDAL paged`)
    const expected = await ours('/ogc/collections/placemarks/items?limit=10000')
    t.equal(features.length, PLACEMARKS)
    t.same(byId(features), byId(expected), 'every placemark once, in id order')
    const list = await ours('/api/v1/placemarks?limit=1000&f=geojson')
    t.same(byId(list), byId(expected), 'the OGC items are the GeoJSON list')
    let differing = 0
    for (const [i, feature] of features.entries()) {
      const want = expected[i]
      if (JSON.stringify(feature.geometry) !== JSON.stringify(want.geometry) || JSON.stringify(comparable(feature.properties)) !== JSON.stringify(comparable(want.properties))) {
        if (differing++ < 3) t.same({ geometry: feature.geometry, properties: comparable(feature.properties) }, { geometry: want.geometry, properties: comparable(want.properties) }, `placemark ${want.id}`)
      }
    }
    t.equal(differing, 0, 'every feature equals ours, property for property (times as the same instants) and coordinate for coordinate')
    t.ok(expected.some((f) => f.properties.time_begin !== null), 'times among them')
  })

  t.test('spatial and attribute filters give the placemarks of our own filters', async (t) => {
    const features = await ogr2ogr('spat', '-spat', '-115.18', '36.09', '-115.16', '36.11')
    const expected = await ours('/api/v1/spatial/bbox?min_lon=-115.18&min_lat=36.09&max_lon=-115.16&max_lat=36.11&limit=10000&f=geojson')
    t.ok(expected.length > 0 && expected.length < PLACEMARKS, `${expected.length} placemarks in the box`)
    t.same(byId(features), byId(expected))
    const lines = await ogr2ogr('where', '-where', 'geometry_type = \'LineString\'')
    const linesExpected = await ours('/ogc/collections/placemarks/items?limit=10000&geometry_type=LineString')
    t.equal(linesExpected.length, 12)
    t.same(byId(lines), byId(linesExpected))
  })

  t.test('the GeoJSON list tells GDAL it is a page: numberMatched and the next link, followed to the end', async (t) => {
    const ids: number[] = []
    let url: string | undefined = `${base}/api/v1/placemarks?f=geojson`
    let pages = 0
    while (url !== undefined) {
      const { stdout } = await run('ogrinfo', ['-ro', '-al', '-oo', 'NATIVE_DATA=YES', '-mdd', 'NATIVE_DATA', '-fields=YES', '-geom=NO', `GeoJSON:${url}`], { env, maxBuffer: 16 * 1024 * 1024 })
      pages++
      t.match(stdout, /Feature Count: 100\b|Feature Count: 50\b/, `page ${pages}: the page's features`)
      const native = /NATIVE_DATA=(\{.*\})$/m.exec(stdout)?.[1]
      const members = JSON.parse(native ?? '{}') as { numberMatched?: number; links?: { rel: string; href: string }[] }
      t.equal(members.numberMatched, PLACEMARKS, `page ${pages}: GDAL reads numberMatched`)
      ids.push(...[...stdout.matchAll(/^ {2}id \(Integer\) = (\d+)$/gm)].map((m) => Number(m[1])))
      url = members.links?.find((l) => l.rel === 'next')?.href
    }
    t.equal(pages, 3, 'three pages of the default 100')
    t.same(ids, Array.from({ length: PLACEMARKS }, (_, i) => i + 1), 'every placemark once, in id order')
    const { stdout } = await run('ogrinfo', ['-ro', '-so', '-al', `GeoJSON:${base}/api/v1/placemarks?f=geojson&limit=1000&folder=Las%20Vegas%20Strip`], { env })
    t.match(stdout, /time_begin: DateTime/, 'the GeoJSON driver reads the times as DateTime too')
  })
})

// Only what is about the Vegas file itself needs it.
t.test('GDAL reads the whole Vegas KMZ through the OGC service', { skip: vegasAbsent || gdalAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  const port = await freePort()
  const app = await buildTestApp(t, handle, { PUBLIC_URL: `http://127.0.0.1:${port}` })
  await app.listen({ port, host: '127.0.0.1' })
  const { stdout } = await run('ogrinfo', ['-ro', '-so', `OAPIF:http://127.0.0.1:${port}/ogc`, 'placemarks'], { env: { ...process.env, GDAL_HTTP_TIMEOUT: '30' } })
  t.match(stdout, /Feature Count: 545\b/)
  t.match(stdout, /time_begin: DateTime/, 'typed from the schema, though no Vegas placemark has a KML time')
})
