import t from 'tap'
import { buildTestApp, importFieldNotes, openTestDatabase } from '../helper.ts'

const PUBLIC_URL = 'http://gis.example.test'

t.test('`f` is `format` under the name OGC API clients send; the GeoJSON list says how many match and links its pages', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importFieldNotes(handle)
  const app = await buildTestApp(t, handle, { PUBLIC_URL, RATE_LIMIT_MAX: 100_000 })

  t.test('f=geojson and f=json on every route that takes format', async (t) => {
    for (const url of ['/api/v1/placemarks?limit=5', '/api/v1/placemarks/3', '/api/v1/spatial/bbox?min_lon=-116&min_lat=36&max_lon=-115&max_lat=37&limit=5', '/api/v1/timeline', '/api/v1/timeline/events']) {
      const sep = url.includes('?') ? '&' : '?'
      const byFormat = await app.inject(`${url}${sep}format=geojson`)
      const byF = await app.inject(`${url}${sep}f=geojson`)
      t.equal(byF.statusCode, 200, `${url} f=geojson`)
      t.equal(byF.headers['content-type'], 'application/geo+json', `${url} f=geojson: GeoJSON`)
      t.equal(byF.body, byFormat.body, `${url}: f=geojson is format=geojson`)
      const json = await app.inject({ url: `${url}${sep}f=json`, headers: { accept: 'application/geo+json' } })
      t.match(json.headers['content-type'], /^application\/json/, `${url}: f=json wins over the Accept header`)
      t.equal(json.body, (await app.inject(url)).body)
      t.equal((await app.inject(`${url}${sep}f=geojson&format=geojson`)).statusCode, 200, `${url}: both, agreeing`)
      const clash = await app.inject(`${url}${sep}f=geojson&format=json`)
      t.equal(clash.statusCode, 400, `${url}: both, disagreeing`)
      t.same(clash.json(), { error: 'Bad Request', message: 'querystring/f (geojson) and querystring/format (json) disagree; give one of them' })
      const bad = await app.inject(`${url}${sep}f=html`)
      t.equal(bad.statusCode, 400, `${url}: f=html`)
      t.match(bad.json().message, /^querystring\/f must be equal to one of the allowed values/)
    }
    const doc = (await app.inject('/api/docs/json')).json()
    const params = (doc.paths['/api/v1/placemarks'].get.parameters as { name: string; in: string; description?: string }[]).filter((p) => p.in === 'query').map((p) => p.name)
    t.ok(params.includes('f') && params.includes('format'), 'the OpenAPI document lists f beside format')
  })

  t.test('the OGC routes take f=json and f=geojson too', async (t) => {
    for (const path of ['/ogc', '/ogc/conformance', '/ogc/collections', '/ogc/collections/placemarks', '/ogc/collections/placemarks/items?limit=2', '/ogc/collections/placemarks/items/2', '/ogc/collections/placemarks/queryables', '/ogc/collections/placemarks/schema']) {
      const plain = await app.inject(path)
      for (const f of ['json', 'geojson']) {
        const res = await app.inject(`${path}${path.includes('?') ? '&' : '?'}f=${f}`)
        t.equal(res.statusCode, 200, `${path} f=${f}`)
        if (!path.includes('/items')) t.equal(res.body, plain.body, `${path} f=${f}: the same answer`)
      }
      t.equal((await app.inject(`${path}${path.includes('?') ? '&' : '?'}f=html`)).statusCode, 400, `${path} f=html: not offered`)
    }
  })

  t.test('the GeoJSON list: numberMatched, numberReturned and self/next/prev links with its filters', async (t) => {
    const page = async (url: string) => (await app.inject(url)).json() as { features: unknown[]; numberMatched: number; numberReturned: number; links: { rel: string; href: string; type: string }[] }
    const first = await page('/api/v1/placemarks?f=geojson')
    t.equal(first.numberMatched, 250)
    t.equal(first.numberReturned, 100)
    t.same(first.links, [
      { href: `${PUBLIC_URL}/api/v1/placemarks?limit=100&offset=0&f=geojson`, rel: 'self', type: 'application/geo+json' },
      { href: `${PUBLIC_URL}/api/v1/placemarks?limit=100&offset=100&f=geojson`, rel: 'next', type: 'application/geo+json' }
    ])
    const last = await page('/api/v1/placemarks?f=geojson&offset=200')
    t.equal(last.numberReturned, 50)
    t.same(last.links.map((l) => l.rel), ['self', 'prev'], 'the last page: no next')
    const filtered = await page('/api/v1/placemarks?format=geojson&folder=Downtown&q=note&limit=20&offset=20')
    const downtown = ((await app.inject('/api/v1/placemarks?folder=Downtown&q=note&limit=1000')).json().placemarks as unknown[]).length
    t.equal(filtered.numberMatched, downtown, 'counted with the filters')
    t.equal(filtered.links.find((l) => l.rel === 'next')?.href, `${PUBLIC_URL}/api/v1/placemarks?limit=20&offset=40&folder=Downtown&q=note&f=geojson`)
    t.equal(filtered.links.find((l) => l.rel === 'prev')?.href, `${PUBLIC_URL}/api/v1/placemarks?limit=20&offset=0&folder=Downtown&q=note&f=geojson`)
    const none = await page('/api/v1/placemarks?f=geojson&q=nowhere')
    t.same([none.numberMatched, none.numberReturned, none.links.map((l) => l.rel)], [0, 0, ['self']])
    t.notOk('numberMatched' in (await app.inject('/api/v1/placemarks')).json(), 'the JSON answer is as it was')
  })

  t.test('the OGC schema and queryables type the times as date-time', async (t) => {
    const collection = (await app.inject('/ogc/collections/placemarks')).json() as { links: { rel: string; href: string; type: string }[] }
    const described = collection.links.filter((l) => l.rel.toLowerCase() === 'describedby')
    t.same(described.map((l) => [l.rel, l.href, l.type]), [
      ['describedby', `${PUBLIC_URL}/ogc/collections/placemarks/schema`, 'application/schema+json'],
      ['describedBy', `${PUBLIC_URL}/ogc/collections/placemarks/schema`, 'application/schema+json']
    ])
    const schema = await app.inject('/ogc/collections/placemarks/schema')
    t.match(schema.headers['content-type'], /^application\/schema\+json/)
    const properties = schema.json().properties.properties.properties
    for (const name of ['created_at', 'time_begin', 'time_end']) t.same(properties[name].format, 'date-time', `${name}: date-time`)
    t.same(properties.folder_path.items, { type: 'string' })
    const queryables = (await app.inject('/ogc/collections/placemarks/queryables')).json().properties
    t.same([queryables.time_begin.format, queryables.time_end.format], ['date-time', 'date-time'])
    // GDAL pushes a filter on a DateTime field down as `datetime`, a date written with a bare T.
    const items = async (q: string) => (await app.inject(`/ogc/collections/placemarks/items?limit=1${q}`)).json().numberMatched as number
    t.equal(await items('&datetime=2017-10-03T/..'), await items('&datetime=2017-10-03/..'), 'a date with a bare T is the date')
    t.ok(await items('&datetime=2017-10-03/..') > 0)
  })
})
