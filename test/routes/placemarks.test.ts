import t from 'tap'
import { createReadStream } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'

const fixture = fileURLToPath(new URL('../fixtures/small.kml', import.meta.url))

// PostgreSQL here; the same behaviour on PGlite is test/db/pglite-contract.test.ts.
for (const kind of ['postgres'] as const) {
  t.test(`placemark API on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const summary = await importPlacemarks(handle, createReadStream(fixture), { timeZone: 'America/Los_Angeles', source: 'small.kml' })
    t.match(summary, { placemarks: 7, styles: 2, folders: 3, skipped: { MultiGeometry: 1 }, timelineEvents: 3, timestampedEvents: 2 })
    const app = await buildTestApp(t, handle)
    const get = async (url: string) => {
      const res = await app.inject({ method: 'GET', url })
      return { status: res.statusCode, body: res.json(), headers: res.headers }
    }

    t.test('health', async (t) => {
      t.match(await get('/health'), { status: 200, body: { status: 'ok' } })
    })

    t.test('list: defaults, order, fields', async (t) => {
      const { status, body } = await get('/api/v1/placemarks')
      t.equal(status, 200)
      t.equal(body.limit, 100)
      t.equal(body.offset, 0)
      t.same(body.placemarks.map((p: { id: number }) => p.id), [1, 2, 3, 4, 5, 6, 7])
      const first = body.placemarks[1]
      t.same(first.folder_path, ['Alpha'])
      t.equal(first.style_id, 'red-map')
      t.same(first.media_links, ['https://example.org/a.jpg', 'https://example.org/b.mp4'])
      t.same(JSON.parse(first.geometry), { type: 'Point', coordinates: [-115.1728, 36.0955] })
      t.notOk('extended_data' in first)
      t.match(first.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      t.same(body.placemarks[0].folder_path, [])
    })

    t.test('list: paging and folder filter', async (t) => {
      const page = (await get('/api/v1/placemarks?limit=2&offset=3')).body
      t.same(page.placemarks.map((p: { id: number }) => p.id), [4, 5])
      t.equal(page.limit, 2)
      t.equal(page.offset, 3)
      const beta = (await get('/api/v1/placemarks?folder=Beta')).body
      t.same(beta.placemarks.map((p: { id: number }) => p.id), [3, 4, 5, 6, 7], 'exact name at any level')
      t.same((await get('/api/v1/placemarks?folder=Alp')).body.placemarks, [], 'no partial match')
    })

    t.test('list: bad input is 400 with {error, message}', async (t) => {
      for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'offset=-1', 'offset=1.5', 'limit=']) {
        const { status, body } = await get(`/api/v1/placemarks?${q}`)
        t.equal(status, 400, q)
        t.equal(body.error, 'Bad Request', q)
        t.type(body.message, 'string', q)
      }
      t.same((await get('/api/v1/placemarks?limit=1001')).body, { error: 'Bad Request', message: 'querystring/limit must be <= 1000' })
    })

    t.test('one placemark', async (t) => {
      const { status, body } = await get('/api/v1/placemarks/2')
      t.equal(status, 200)
      t.same(body.extended_data, [{ key: 'source', value: 'scanner' }])
      t.equal(body.description, '<b>bold</b> text')
      const poly = (await get('/api/v1/placemarks/4')).body
      t.same(JSON.parse(poly.geometry).coordinates.length, 2, 'outer ring and hole')
      t.same(await get('/api/v1/placemarks/999').then((r) => [r.status, r.body]), [404, { error: 'Not Found', message: 'Placemark 999 not found' }])
      for (const id of ['abc', '0', '-1', '1.5', '99999999999']) t.equal((await get(`/api/v1/placemarks/${id}`)).status, 400, id)
    })

    t.test('timeline', async (t) => {
      const events = (await get('/api/v1/timeline/events')).body
      t.same(events.map((e: { placemark_id: number }) => e.placemark_id), [7, 2, 3], 'by instant, date-only at local midnight')
      t.same(events[1], {
        timestamp: '2017-10-02T05:09:48Z',
        date: '2017-10-01',
        name: '10/1/2017 10:09:48 PM - First',
        description: '<b>bold</b> text',
        location: { lat: 36.0955, lon: -115.1728 },
        media_links: ['https://example.org/a.jpg', 'https://example.org/b.mp4'],
        placemark_id: 2,
        folder_path: ['Alpha']
      })
      t.equal(events[2].timestamp, null)
      t.same(events[2].location, { lat: 35.5, lon: -115 })
      const summary = (await get('/api/v1/timeline')).body
      t.equal(summary.count, 3)
      t.same(summary.events, events)
    })

    t.test('bbox', async (t) => {
      const ids = async (q: string) => {
        const { status, body } = await get(`/api/v1/spatial/bbox?${q}`)
        t.equal(status, 200, q)
        t.equal(body.count, body.placemarks.length)
        return body.placemarks.map((p: { id: number }) => p.id)
      }
      t.same(await ids('min_lon=-0.5&min_lat=-0.5&max_lon=0.5&max_lat=0.5'), [1], 'zero coordinates')
      t.same(await ids('min_lon=0&min_lat=0&max_lon=0&max_lat=0'), [1], 'a degenerate box on the point')
      t.same(await ids('min_lon=-115.1&min_lat=35&max_lon=-115&max_lat=36'), [3], 'line crossing with no vertex inside')
      t.same(await ids('min_lon=12&min_lat=12&max_lon=13&max_lat=13'), [4], 'box inside the polygon')
      t.same(await ids('min_lon=14.5&min_lat=14.5&max_lon=15.5&max_lat=15.5'), [], 'box inside the hole')
      t.same(await ids('min_lon=170&min_lat=-20&max_lon=-170&max_lat=-10'), [5, 6], 'antimeridian box')
      t.same(await ids('min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=2'), [1, 2], 'limit caps in id order')
      // The box query decodes rows its own way: its placemarks must equal the list endpoint's, field for field.
      const everything = (await get('/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90')).body.placemarks
      const listed = (await get('/api/v1/placemarks?limit=100')).body.placemarks
      t.ok(everything.length >= 5)
      t.strictSame(everything, listed.filter((p: { id: number }) => everything.some((b: { id: number }) => b.id === p.id)), 'same summaries as the list')
      const echo = (await get('/api/v1/spatial/bbox?min_lon=1.5&min_lat=2&max_lon=3&max_lat=4')).body.bbox
      t.same(echo, { min_lon: 1.5, min_lat: 2, max_lon: 3, max_lat: 4 })
      for (const q of ['min_lat=0&max_lon=1&max_lat=1', 'min_lon=x&min_lat=0&max_lon=1&max_lat=1', 'min_lon=0&min_lat=5&max_lon=1&max_lat=1',
        'min_lon=-181&min_lat=0&max_lon=1&max_lat=1', 'min_lon=0&min_lat=-91&max_lon=1&max_lat=1', 'min_lon=0&min_lat=0&max_lon=1&max_lat=1&limit=10001',
        'min_lon=Infinity&min_lat=0&max_lon=1&max_lat=1', 'min_lon=NaN&min_lat=0&max_lon=1&max_lat=1']) {
        const { status, body } = await get(`/api/v1/spatial/bbox?${q}`)
        t.equal(status, 400, q)
        t.same(Object.keys(body).sort(), ['error', 'message'], q)
      }
    })

    t.test('folders and stats', async (t) => {
      t.same((await get('/api/v1/folders')).body, { folders: ['Alpha', 'Beta'], count: 2 })
      t.same((await get('/api/v1/stats')).body, {
        total_placemarks: 7,
        total_styles: 2,
        geometry_types: { LineString: 1, Point: 5, Polygon: 1 },
        top_folders: { Beta: 5, Alpha: 3 },
        timezone: 'America/Los_Angeles'
      })
    })

    t.test('unknown route and CORS', async (t) => {
      const res = await app.inject({ method: 'GET', url: '/api/v1/nope' })
      t.equal(res.statusCode, 404)
      t.same(Object.keys(res.json()).sort(), ['error', 'message'])
      const ok = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'http://localhost:5173' } })
      t.equal(ok.headers['access-control-allow-origin'], 'http://localhost:5173')
      const no = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://evil.example' } })
      t.notOk(no.headers['access-control-allow-origin'])
    })
  })
}
