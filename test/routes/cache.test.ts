import t from 'tap'
import { createReadStream } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { buildTestApp, openTestDatabase, projectRoot } from '../helper.ts'
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
