import t from 'tap'
import { createReadStream } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { buildApp, buildTestApp, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { join } from 'node:path'
import { HttpError } from '../../lib/errors.ts'

t.test('dataset responses are cached per URL and invalidated by an import', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  const sample = join(projectRoot, 'db/sample/sample.kml')
  const small = join(projectRoot, 'test/fixtures/small.kml')
  await importPlacemarks(handle, createReadStream(sample), { timeZone: 'America/Los_Angeles', source: 'sample.kml' })
  const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 50 })

  const first = await app.inject('/api/v1/stats')
  t.equal(first.statusCode, 200)
  const etag = first.headers.etag as string
  t.match(etag, /^"1-[\w-]+"$/)
  t.equal(first.headers['cache-control'], 'public, max-age=0, must-revalidate')
  const second = await app.inject('/api/v1/stats')
  t.equal(second.body, first.body)
  t.equal(second.headers.etag, etag, 'served from the cache')

  const notModified = await app.inject({ url: '/api/v1/stats', headers: { 'if-none-match': etag } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')

  const plain = await app.inject('/api/v1/placemarks?limit=1000')
  const zipped = await app.inject({ url: '/api/v1/placemarks?limit=1000', headers: { 'accept-encoding': 'gzip, br' } })
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.equal(gunzipSync(zipped.rawPayload).toString(), plain.body)
  t.ok(zipped.rawPayload.length < plain.rawPayload.length / 3, 'compressed')
  t.notOk(plain.headers['content-encoding'])

  // Another process imports: every instance notices the new version within its poll interval.
  await importPlacemarks(handle, createReadStream(small), { timeZone: 'UTC', source: 'small.kml' })
  await new Promise((resolve) => setTimeout(resolve, 200))
  const after = await app.inject('/api/v1/stats')
  t.equal(after.json().total_placemarks, 7)
  t.match(after.headers.etag, /^"2-/)
  t.equal((await app.inject({ url: '/api/v1/stats', headers: { 'if-none-match': etag } })).statusCode, 200, 'the old ETag no longer matches')

  const missing = await app.inject('/api/v1/placemarks/999')
  t.equal(missing.statusCode, 404)
  t.notOk(missing.headers.etag, 'errors are not cached')
})

t.test('concurrent misses of one URL share one computation', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig(), db: handle, logger: false })
  t.teardown(() => app.close())
  let runs = 0
  let release!: () => void
  let gate = new Promise<void>((resolve) => { release = resolve })
  let fail = false
  // A dataset route of the test's own, cached as the dataset-cache plugin caches the real ones.
  await app.register(async (scoped) => {
    scoped.addHook('onRoute', (route) => app.datasetCache.cacheRoute(route))
    scoped.get('/test/shared', async () => {
      runs++
      const failing = fail
      await gate
      if (failing) throw new HttpError(503, 'try again')
      return { runs }
    })
  })
  await app.ready()

  // Ten at once on a cold cache: the first runs the route, the others wait and get its answer.
  const first = Promise.all(Array.from({ length: 10 }, () => app.inject('/test/shared')))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(runs, 1, 'the route ran once while the others waited')
  release()
  const answers = await first
  t.same(answers.map((a) => a.statusCode), Array(10).fill(200))
  t.same(answers.map((a) => a.json()), Array(10).fill({ runs: 1 }))
  t.equal(new Set(answers.map((a) => a.headers.etag)).size, 1, 'one ETag for all')
  t.equal(runs, 1)

  // A query string is another URL, another computation; one waiter asks If-None-Match with the ETag to come.
  gate = new Promise<void>((resolve) => { release = resolve })
  const etag = answers[0].headers.etag as string
  const second = Promise.all([
    app.inject('/test/shared?x=1'),
    app.inject({ url: '/test/shared?x=1', headers: { 'if-none-match': etag } }),
    app.inject({ url: '/test/shared?x=1', headers: { 'accept-encoding': 'gzip' } })
  ])
  await new Promise((resolve) => setTimeout(resolve, 50))
  release()
  const [plain, conditional, zipped] = await second
  t.equal(runs, 2)
  t.equal(plain.statusCode, 200)
  t.equal(zipped.body, plain.body, 'a small body is not compressed')
  t.equal(conditional.statusCode, 200, 'another URL\'s ETag does not match')

  // An error is shared by the requests that waited for it, and not kept: the next request runs the route.
  gate = new Promise<void>((resolve) => { release = resolve })
  fail = true
  const failing = Promise.all(Array.from({ length: 4 }, () => app.inject('/test/shared?y=1')))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(runs, 3, 'one ran, three waited')
  fail = false
  release()
  const afterFailure = await failing
  t.same(afterFailure.map((a) => a.statusCode), [503, 503, 503, 503], 'the waiters share the error')
  t.same(afterFailure[0].json(), { error: 'Service Unavailable', message: 'try again' })
  const retried = await app.inject('/test/shared?y=1')
  t.equal(retried.statusCode, 200, 'the error was not kept')
  t.equal(runs, 4)
})

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`an import is served the moment it commits, HEAD included, on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const sample = join(projectRoot, 'db/sample/sample.kml')
    const small = join(projectRoot, 'test/fixtures/small.kml')
    await importPlacemarks(handle, createReadStream(sample), { timeZone: 'UTC', source: 'sample.kml' })
    // A poll far away: only the import's notification can tell this instance.
    const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 3_600_000 })
    const before = await app.inject('/api/v1/stats')
    const head = await app.inject({ method: 'HEAD', url: '/api/v1/stats' })
    t.equal(head.statusCode, 200)
    t.equal(head.body, '', 'HEAD has no body')
    t.equal(head.headers.etag, before.headers.etag, 'HEAD is answered from the cache')
    t.equal(head.headers['content-length'], String(before.rawPayload.length))

    await importPlacemarks(handle, createReadStream(small), { timeZone: 'UTC', source: 'small.kml' })
    // The notification arrives on its own connection; give it the time of a round trip.
    let after = await app.inject('/api/v1/stats')
    for (let i = 0; i < 50 && after.headers.etag === before.headers.etag; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      after = await app.inject('/api/v1/stats')
    }
    t.equal(after.json().total_placemarks, 7, 'the new dataset is served')
    t.match(after.headers.etag, /^"2-/)
    const headAfter = await app.inject({ method: 'HEAD', url: '/api/v1/stats' })
    t.equal(headAfter.headers.etag, after.headers.etag, 'HEAD follows')
  })
}

t.test('dataset routes refuse unknown query parameters and honour Accept-Encoding q-values', async (t) => {
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'db/sample/sample.kml')), { timeZone: 'UTC', source: 'sample.kml' })
  const app = await buildTestApp(t, handle)
  for (const url of ['/api/v1/stats?fresh=1', '/api/v1/placemarks?limit=5&page=2', '/api/v1/folders?x', '/api/v1/timeline?cachebust=1']) {
    const res = await app.inject(url)
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().error, 'Bad Request', url)
  }
  const box = '/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=3'
  const boxes = [await app.inject(box), await app.inject(box)]
  t.same(boxes.map((b) => b.statusCode), [200, 200])
  t.equal(boxes[1].body, boxes[0].body, 'box queries answer the same twice')
  t.equal(boxes[0].json().count, 3)
  t.notOk(boxes[0].headers.etag, 'box queries are answered from the box index, not the answer cache')
  const url = '/api/v1/placemarks?limit=1000'
  const encoding = async (header: string) => (await app.inject({ url, headers: { 'accept-encoding': header } })).headers['content-encoding']
  t.equal(await encoding('gzip'), 'gzip')
  t.equal(await encoding('gzip;q=0'), undefined, 'gzip;q=0 refuses gzip')
  t.equal(await encoding('br;q=1, gzip;q=0.5'), 'gzip')
  t.equal(await encoding('identity'), undefined)
  t.equal(await encoding('*'), 'gzip')
})
