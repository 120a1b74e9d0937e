import t, { type Test } from 'tap'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, importVegas, openTestDatabase, projectRoot, vegasAbsent } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { loadBoxIndex } from '../../plugins/app/box-index.ts'
import { mulberry32 } from '../../lib/random.ts'
import { until } from '../support/shared-state.ts'
import type { FastifyInstance } from 'fastify'

const small = join(projectRoot, 'test/fixtures/small.kml')

// Boxes around the data's own coordinates, random sizes, some crossing the antimeridian.
function boxes (seed: number, centres: [number, number][], n: number): string[] {
  const rand = mulberry32(seed)
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    const [x, y] = centres[Math.floor(rand() * centres.length)]
    const w = rand() * 0.05
    const minLon = x - rand() * w
    const maxLon = minLon + w > 180 ? minLon + w - 360 : minLon + w
    const minLat = Math.max(-90, y - rand() * w)
    out.push(`min_lon=${minLon}&min_lat=${minLat}&max_lon=${maxLon}&max_lat=${Math.min(90, minLat + w)}&limit=${1 + Math.floor(rand() * 50)}`)
  }
  return out
}

const fixed = ['min_lon=-0.5&min_lat=-0.5&max_lon=0.5&max_lat=0.5', 'min_lon=0&min_lat=0&max_lon=0&max_lat=0',
  'min_lon=-115.1&min_lat=35&max_lon=-115&max_lat=36', 'min_lon=12&min_lat=12&max_lon=13&max_lat=13',
  'min_lon=14.5&min_lat=14.5&max_lon=15.5&max_lat=15.5', 'min_lon=170&min_lat=-20&max_lon=-170&max_lat=-10',
  'min_lon=-180&min_lat=-90&max_lon=180&max_lat=90', 'min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=2',
  'min_lon=180&min_lat=-90&max_lon=-180&max_lat=90', 'min_lon=-115.4&min_lat=35.9&max_lon=-114.9&max_lat=36.4&limit=10000']

async function sameAnswers (t: Test, memory: FastifyInstance, database: FastifyInstance, queries: string[]) {
  let found = 0
  for (const q of queries) {
    const a = await memory.inject(`/api/v1/spatial/bbox?${q}`)
    const b = await database.inject(`/api/v1/spatial/bbox?${q}`)
    if (a.statusCode !== 200 || a.body !== b.body) {
      t.fail(`${q}: memory ${a.statusCode} ${a.body.slice(0, 200)} ≠ database ${b.statusCode} ${b.body.slice(0, 200)}`)
      return
    }
    found += a.json().count
  }
  t.pass(`${queries.length} boxes, ${found} placemarks, byte for byte`)
}

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`box queries from memory equal the database's on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    await importPlacemarks(handle, createReadStream(small), { timeZone: 'UTC', source: 'small.kml' })
    const memory = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100 })
    const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
    await memory.boxIndex.idle()
    t.match(memory.boxIndex.loaded(), { version: 1, placemarks: 7 })
    t.equal(database.boxIndex.loaded(), null, 'BBOX_INDEX_MB=0 keeps nothing')
    await sameAnswers(t, memory, database, [...fixed, ...boxes(3, [[0, 0], [-115, 35.5], [12.5, 12.5], [15, 15], [179.9, -15], [-179.9, -15]], 150)])

    // A new import: the stale index is not used, and the new one loads after the version poll.
    await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
    await until(async () => memory.boxIndex.loaded()?.version === 2, 5000)
    t.match(memory.boxIndex.loaded(), { placemarks: 57 })
    await sameAnswers(t, memory, database, [...fixed, ...boxes(4, [[-115.17, 36.11], [-115.15, 36.12]], 100)])
  })
}

t.test('the Vegas dataset: memory equals the database for 400 boxes', { skip: vegasAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  const memory = await buildTestApp(t, handle)
  const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
  await memory.boxIndex.idle()
  t.match(memory.boxIndex.loaded(), { placemarks: 545 })
  const { body } = await database.inject('/api/v1/placemarks?limit=1000')
  const centres = (JSON.parse(body) as { placemarks: { geometry: string }[] }).placemarks.map((p) => {
    const g = JSON.parse(p.geometry) as { type: string; coordinates: unknown }
    const first = (g.type === 'Point' ? g.coordinates : g.type === 'LineString' ? (g.coordinates as number[][])[0] : (g.coordinates as number[][][])[0][0]) as [number, number]
    return first
  })
  await sameAnswers(t, memory, database, boxes(5, centres, 400))
})

t.test('a dataset past the byte budget is not kept', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1000, pageSize: 5 }), null)
  const all = await loadBoxIndex(handle.db, { maxBytes: 1 << 20, pageSize: 5 })
  t.equal(all?.size, 57, 'pages of 5 add up')
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1 << 20, stop: () => true }), null, 'stops when asked')
})
