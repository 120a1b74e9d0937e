import t from 'tap'
import { createReadStream } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { buildTestApp, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { buildApp } from '../../app.ts'
import { importPlacemarks } from '../../lib/import/placemarks.ts'
import { join } from 'node:path'

t.test('dataset responses are cached per URL and invalidated by an import', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  const sample = join(projectRoot, 'db/sample/sample.kml')
  const small = join(projectRoot, 'test/fixtures/small.kml')
  await importPlacemarks(handle, createReadStream(sample), { timeZone: 'America/Los_Angeles', source: 'sample.kml' })
  const app = await buildTestApp(t, handle, { CACHE_VERSION_POLL_MS: 50 })

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
  await new Promise((r) => setTimeout(r, 200))
  const after = await app.inject('/api/v1/stats')
  t.equal(after.json().total_placemarks, 7)
  t.match(after.headers.etag, /^"2-/)
  t.equal((await app.inject({ url: '/api/v1/stats', headers: { 'if-none-match': etag } })).statusCode, 200, 'the old ETag no longer matches')

  const missing = await app.inject('/api/v1/placemarks/999')
  t.equal(missing.statusCode, 404)
  t.notOk(missing.headers.etag, 'errors are not cached')
})

t.test('concurrent misses of one URL share one computation', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  const app = await buildApp({ config: testConfig(), db: handle, logger: false })
  t.teardown(() => app.close())
  let runs = 0
  let release!: () => void
  let gate = new Promise<void>((r) => { release = r })
  let answer = 200
  app.get('/test/shared', { config: { datasetCache: true } }, async (_request, reply) => {
    runs++
    const status = answer
    await gate
    if (status !== 200) return reply.code(status).send({ error: 'Service Unavailable', message: 'try again' })
    return { runs }
  })
  await app.ready()

  // Ten at once on a cold cache: the first runs the route, the others wait and get its answer.
  const first = Promise.all(Array.from({ length: 10 }, () => app.inject('/test/shared')))
  await new Promise((r) => setTimeout(r, 50))
  t.equal(runs, 1, 'the route ran once while the others waited')
  release()
  const answers = await first
  t.same(answers.map((a) => a.statusCode), Array(10).fill(200))
  t.same(answers.map((a) => a.json()), Array(10).fill({ runs: 1 }))
  t.equal(new Set(answers.map((a) => a.headers.etag)).size, 1, 'one ETag for all')
  t.equal(runs, 1)

  // A query string is another URL, another computation; one waiter asks If-None-Match with the ETag to come.
  gate = new Promise<void>((r) => { release = r })
  const etag = answers[0].headers.etag as string
  const second = Promise.all([
    app.inject('/test/shared?x=1'),
    app.inject({ url: '/test/shared?x=1', headers: { 'if-none-match': etag } }),
    app.inject({ url: '/test/shared?x=1', headers: { 'accept-encoding': 'gzip' } })
  ])
  await new Promise((r) => setTimeout(r, 50))
  release()
  const [plain, conditional, zipped] = await second
  t.equal(runs, 2)
  t.equal(plain.statusCode, 200)
  t.equal(zipped.body, plain.body, 'a small body is not compressed')
  t.equal(conditional.statusCode, 200, 'another URL\'s ETag does not match')

  // An answer that is not kept (an error) lets each waiter run the route itself.
  gate = new Promise<void>((r) => { release = r })
  answer = 503
  const failing = Promise.all(Array.from({ length: 4 }, () => app.inject('/test/shared?y=1')))
  await new Promise((r) => setTimeout(r, 50))
  t.equal(runs, 3, 'one ran, three waited')
  answer = 200
  release()
  const afterFailure = await failing
  t.equal(afterFailure[0].statusCode, 503, 'the first got its error')
  t.same(afterFailure.slice(1).map((a) => a.statusCode), [200, 200, 200], 'the waiters ran the route themselves')
  t.equal(runs, 6)
})
