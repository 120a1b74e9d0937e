import t, { type Test } from 'tap'
import { createReadStream, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { get, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gunzipSync } from 'node:zlib'
import { buildApp, buildTestApp, importVegas, openTestDatabase, projectRoot, testConfig, vegasAbsent } from '../helper.ts'
import { loggerOptions } from '../../lib/logger.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { loadBoxIndex } from '../../db/box-index-load.ts'
import { spawnScript } from '../support/run.ts'
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

    // A new import: the stale index is let go at once (box queries read the database meanwhile), and
    // the new one loads after the version poll.
    await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
    await until(async () => memory.datasetVersion.current() === 2, 5000)
    t.not(memory.boxIndex.loaded()?.version, 1, 'the old index is not kept beside the new one')
    await until(async () => memory.boxIndex.loaded()?.version === 2, 5000)
    t.match(memory.boxIndex.loaded(), { placemarks: 57 })
    await sameAnswers(t, memory, database, [...fixed, ...boxes(4, [[-115.17, 36.11], [-115.15, 36.12]], 100)])
  })
}

t.test('the first load starts once the server listens, or a second after ready when it never does', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importPlacemarks(handle, createReadStream(small), { timeZone: 'UTC', source: 'small.kml' })
  const injected = await buildTestApp(t, handle)
  const listening = await buildTestApp(t, handle)
  // Well within the fallback's second; seven placemarks would load in milliseconds if the load had begun.
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(listening.boxIndex.state(), 'loading', 'ready, and not loaded before it listens')
  t.equal(listening.boxIndex.loaded(), null)
  await listening.listen({ port: 0, host: '127.0.0.1' })
  await until(async () => listening.boxIndex.state() === 'ready', 10_000)
  t.match(listening.boxIndex.loaded(), { placemarks: 7 }, 'loaded once the server listens')
  await until(async () => injected.boxIndex.state() === 'ready', 10_000)
  t.match(injected.boxIndex.loaded(), { placemarks: 7 }, 'loaded without a listen or an idle()')
})

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

t.test('a dataset past the byte budget is not kept, and says how much it needs', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
  const needed: number[] = []
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1000, pageSize: 5, tooBig: (bytes) => needed.push(bytes) }), null)
  const all = await loadBoxIndex(handle.db, { maxBytes: 1 << 20, pageSize: 5 })
  t.equal(all?.size, 57, 'pages of 5 add up')
  t.ok(needed[0]! > 0.5 * all!.memoryBytes && needed[0]! < 2 * all!.memoryBytes, `the estimate (${Math.round(needed[0]!)} bytes) is near what the index holds (${all!.memoryBytes})`)
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1 << 20, stop: () => true }), null, 'stops when asked')

  // In the app: a warning naming the size and the setting, the state in /health, answers from the database.
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done() } })
  const app = await buildApp({ config: testConfig({ BBOX_INDEX_MB: 0.001 }), db: handle, logger: { ...(loggerOptions('warn', 'json') as object), stream } })
  await app.ready()
  t.teardown(() => app.close())
  await app.boxIndex.idle()
  t.equal(app.boxIndex.state(), 'too-big')
  t.same((await app.inject('/health')).json(), { status: 'ok', box_index: 'too-big' })
  t.same((await app.inject('/health/ready')).json(), { status: 'ok' })
  const warning = lines.map((l) => JSON.parse(l) as { msg: string; neededMb?: number; maxMb?: number }).find((l) => l.neededMb !== undefined)
  t.match(warning, { neededMb: 1, maxMb: 0.001, msg: /needs about 1 MB, past BBOX_INDEX_MB=0\.001: box queries read the database/ })
  t.equal((await app.inject('/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=3')).json().count, 3)
})

t.test('the index built in a process of its own: the same answers, the byte budget, stopping, errors, no file left', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  // The builder's file goes in a temporary directory of this test's, to see that none is left behind.
  const tmp = t.testdir({})
  const tmpBefore = process.env.TMPDIR
  process.env.TMPDIR = tmp
  t.teardown(() => { if (tmpBefore === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = tmpBefore })
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
  const worker = { workerUrl: handle.url!, workerFrom: 0 }
  const inThread = await loadBoxIndex(handle.db, { maxBytes: 1 << 20 })
  const moved = await loadBoxIndex(handle.db, { maxBytes: 1 << 20, pageSize: 7, ...worker })
  t.equal(moved?.size, 57)
  t.equal(moved?.memoryBytes, inThread?.memoryBytes, 'the same arrays, read into this process')
  const all = { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }
  const bytes = (index: typeof moved) => {
    const answer = index!.search(all, 1000)
    const out = Buffer.alloc(answer.byteLength)
    answer.copyTo(out, 0)
    return out.toString()
  }
  t.equal(bytes(moved), bytes(inThread), 'every summary, byte for byte')

  const needed: number[] = []
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1000, tooBig: (b) => needed.push(b), ...worker }), null, 'past the budget: nothing')
  t.ok(needed[0]! > 1000, 'and the bytes needed are told')
  t.equal(await loadBoxIndex(handle.db, { maxBytes: 1 << 20, stop: () => true, ...worker }), null, 'stops when asked')
  await t.rejects(loadBoxIndex(handle.db, { maxBytes: 1 << 20, workerUrl: 'postgres://nobody@127.0.0.1:1/none', workerFrom: 0 }),
    /^the box index process exited \(code 1\) without an index: connect ECONNREFUSED 127\.0\.0\.1:1$/, 'a builder that cannot connect fails the load, saying why')
  t.same(readdirSync(tmp).filter((name) => name.startsWith('box-index-')), [], 'no builder\'s directory is left: loaded, too big, stopped or failed')

  // A server killed while its builder runs: the builder removes its directory and exits.
  const killed = await spawnScript('test/support/box-index-orphan.ts', [handle.url!], { TMPDIR: tmp })
  t.same([killed.code, killed.stdout], [null, 'building\n'], 'the server was killed while its builder ran')
  let left = readdirSync(tmp).filter((name) => name.startsWith('box-index-'))
  for (let i = 0; i < 100 && left.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    left = readdirSync(tmp).filter((name) => name.startsWith('box-index-'))
  }
  t.same(left, [], 'the builder of a killed server removes its directory')

  // Through the app: the builder process's index serves the same bytes as the database.
  const memory = await buildTestApp(t, handle, { BBOX_INDEX_WORKER_MIN: 0 })
  const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
  await memory.boxIndex.idle()
  t.equal(memory.boxIndex.state(), 'ready')
  await sameAnswers(t, memory, database, [...fixed, ...boxes(6, [[-115.17, 36.11], [-115.15, 36.12]], 100)])
})

t.test('box answers gzipped for clients that take it, on both paths', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
  for (const app of [await buildTestApp(t, handle), await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })]) {
    await app.boxIndex.idle()
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90`
    for (const format of ['', '&format=geojson']) {
      const plain = await raw(`${base}${format}`, {})
      const zipped = await raw(`${base}${format}`, { 'accept-encoding': 'gzip, deflate, br' })
      const state = `${app.boxIndex.state()}${format}`
      t.equal(plain.headers['content-encoding'], undefined, `${state}: no encoding asked, none given`)
      t.equal(zipped.headers['content-encoding'], 'gzip', `${state}: gzip asked, gzip given`)
      t.match(plain.headers.vary, /accept-encoding/i)
      t.match(zipped.headers.vary, /accept-encoding/i)
      t.equal(zipped.headers['content-type'], plain.headers['content-type'])
      t.equal(plain.headers.etag, undefined, 'fresh answers carry no ETag')
      t.ok(zipped.body.length < plain.body.length / 3, `${state}: ${zipped.body.length} bytes for ${plain.body.length}`)
      t.equal(gunzipSync(zipped.body).toString(), plain.body.toString(), `${state}: the same bytes`)
    }
    const small = await raw(`${base.replace('max_lat=90', 'max_lat=-89')}`, { 'accept-encoding': 'gzip' })
    t.equal(small.headers['content-encoding'], undefined, 'a small answer is sent as it is')
  }
})

// A GET over HTTP, the body as sent (not decoded).
function raw (url: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
    }).on('error', reject)
  })
}
