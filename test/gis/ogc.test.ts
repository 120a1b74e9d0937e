import t from 'tap'
import { buildTestApp, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'
import { CONFORMANCE } from '../../routes/ogc/index.ts'

const PUBLIC_URL = 'http://gis.example.test'
// The GeoJSON answers' features with the KML time the OGC features add (the Vegas KMZ has none).
const timed = (features: Feature[]) => features.map((f) => ({ ...f, properties: { ...f.properties, time_begin: null, time_end: null } }))

interface Feature { type: 'Feature'; id: number; geometry: { type: string }; properties: Record<string, unknown> }
interface Link { href: string; rel: string; type?: string }
interface Items { type: 'FeatureCollection'; features: Feature[]; numberMatched: number; numberReturned: number; timeStamp: string; links: Link[] }

t.test('OGC API - Features on PostgreSQL with the Vegas KMZ', { skip: vegasAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  const app = await buildTestApp(t, handle, { PUBLIC_URL })
  const get = async (url: string, headers: Record<string, string> = {}) => app.inject({ url, headers })

  t.test('landing page, conformance, API definition, collections', async (t) => {
    const landing = await get('/ogc')
    t.equal(landing.statusCode, 200)
    t.match(landing.headers['content-type'], /^application\/json/)
    const rels = Object.fromEntries((landing.json().links as Link[]).map((l) => [l.rel, l.href]))
    t.same(rels, {
      self: `${PUBLIC_URL}/ogc`,
      'service-desc': `${PUBLIC_URL}/api/docs/json`,
      'service-doc': `${PUBLIC_URL}/api/docs`,
      conformance: `${PUBLIC_URL}/ogc/conformance`,
      data: `${PUBLIC_URL}/ogc/collections`
    })
    t.same((await get('/ogc/conformance')).json(), { conformsTo: CONFORMANCE })
    const api = await get('/ogc/api')
    t.equal(api.statusCode, 302)
    t.equal(api.headers.location, '/api/docs/json')
    const doc = (await get('/api/docs/json')).json()
    for (const path of ['/ogc', '/ogc/conformance', '/ogc/collections', '/ogc/collections/placemarks', '/ogc/collections/placemarks/items', '/ogc/collections/placemarks/items/{featureId}', '/ogc/collections/placemarks/queryables']) {
      t.ok(doc.paths[path]?.get, `${path} is in the OpenAPI document`)
    }
    const collections = (await get('/ogc/collections')).json()
    t.equal(collections.collections.length, 1)
    const collection = (await get('/ogc/collections/placemarks')).json()
    t.same(collections.collections[0], collection)
    t.equal(collection.id, 'placemarks')
    t.equal(collection.itemType, 'feature')
    const [minLon, minLat, maxLon, maxLat] = collection.extent.spatial.bbox[0]
    t.ok(minLon < -115 && maxLon > -115.3 && minLat > 35 && maxLat < 37 && minLat < maxLat, `extent ${collection.extent.spatial.bbox[0]}`)
    t.same(collection.extent.temporal.interval, [[null, null]])
    const queryables = await get('/ogc/collections/placemarks/queryables')
    t.match(queryables.headers['content-type'], /^application\/schema\+json/)
    t.same(Object.keys(queryables.json().properties), ['geometry', 'folder', 'geometry_type', 'time_begin', 'time_end'])
  })

  t.test('items: paging with links, the same features as the GeoJSON list', async (t) => {
    const first = await get('/ogc/collections/placemarks/items')
    t.equal(first.statusCode, 200)
    t.match(first.headers['content-type'], /^application\/geo\+json/)
    const page = first.json() as Items
    t.equal(page.numberMatched, 545)
    t.equal(page.numberReturned, 10)
    t.ok(!Number.isNaN(Date.parse(page.timeStamp)))
    const rels = Object.fromEntries(page.links.map((l) => [l.rel, l.href]))
    t.equal(rels.self, `${PUBLIC_URL}/ogc/collections/placemarks/items?limit=10&offset=0`)
    t.equal(rels.next, `${PUBLIC_URL}/ogc/collections/placemarks/items?limit=10&offset=10`)
    t.equal(rels.collection, `${PUBLIC_URL}/ogc/collections/placemarks`)
    t.notOk(rels.prev, 'no prev link on the first page')
    const list = (await get('/api/v1/placemarks?limit=10&format=geojson')).json()
    t.same(page.features, timed(list.features), 'the same features as /api/v1/placemarks, with their time')

    // Follow next links to the end with a large page.
    const ids: number[] = []
    let url: string | undefined = '/ogc/collections/placemarks/items?limit=200'
    let pages = 0
    while (url) {
      const body = (await get(url)).json() as Items
      ids.push(...body.features.map((f) => f.id))
      pages++
      const next = body.links.find((l) => l.rel === 'next')?.href
      url = next?.slice(PUBLIC_URL.length)
    }
    t.equal(pages, 3)
    t.equal(ids.length, 545)
    t.equal(new Set(ids).size, 545)
    const last = (await get('/ogc/collections/placemarks/items?limit=200&offset=400')).json() as Items
    t.equal(last.numberReturned, 145)
    t.equal(last.links.find((l) => l.rel === 'prev')?.href, `${PUBLIC_URL}/ogc/collections/placemarks/items?limit=200&offset=200`)
    const beyond = (await get('/ogc/collections/placemarks/items?offset=10000')).json() as Items
    t.equal(beyond.numberReturned, 0)
    t.equal(beyond.numberMatched, 545)
  })

  t.test('items: bbox as the box query, folder and geometry_type as the list', async (t) => {
    const box = '-115.18,36.09,-115.16,36.11'
    const ours = (await get('/api/v1/spatial/bbox?min_lon=-115.18&min_lat=36.09&max_lon=-115.16&max_lat=36.11&limit=10000&format=geojson')).json()
    const items = (await get(`/ogc/collections/placemarks/items?limit=10000&bbox=${box}`)).json() as Items
    t.ok(ours.features.length > 0)
    t.same(items.features, timed(ours.features))
    t.equal(items.numberMatched, ours.count)
    const sixNumbers = (await get('/ogc/collections/placemarks/items?limit=10000&bbox=-115.18,36.09,-100,-115.16,36.11,100')).json() as Items
    t.same(sixNumbers.features, timed(ours.features), 'heights are ignored')

    const folders = (await get('/api/v1/folders')).json().folders as string[]
    const folder = folders[0]
    const byFolder = (await get(`/api/v1/placemarks?limit=1000&format=geojson&folder=${encodeURIComponent(folder)}`)).json()
    const itemsByFolder = (await get(`/ogc/collections/placemarks/items?limit=10000&folder=${encodeURIComponent(folder)}`)).json() as Items
    t.same(itemsByFolder.features, timed(byFolder.features))
    const lines = (await get('/ogc/collections/placemarks/items?limit=10000&geometry_type=LineString')).json() as Items
    const stats = (await get('/api/v1/stats')).json()
    t.equal(lines.numberMatched, stats.geometry_types.LineString ?? 0)
    t.ok(lines.features.every((f) => f.properties.geometry_type === 'LineString'))
    const both = (await get(`/ogc/collections/placemarks/items?limit=10000&bbox=-180,-90,180,90&geometry_type=Point&folder=${encodeURIComponent(folder)}`)).json() as Items
    t.same(both.features, timed(byFolder.features.filter((f: Feature) => f.properties.geometry_type === 'Point')))
  })

  t.test('items: a box across the antimeridian', async (t) => {
    // Around the world the other way: everything but a thin strip east of -115.3 holds all Vegas placemarks.
    const across = (await get('/ogc/collections/placemarks/items?limit=10000&bbox=170,-90,-100,90')).json() as Items
    t.equal(across.numberMatched, 545, 'a box from 170 east across the antimeridian to -100 holds Las Vegas')
    const missing = (await get('/ogc/collections/placemarks/items?limit=10000&bbox=170,-90,-120,90')).json() as Items
    t.equal(missing.numberMatched, 0, 'one stopping at -120 does not')
    const ours = (await get('/api/v1/spatial/bbox?min_lon=170&min_lat=-90&max_lon=-100&max_lat=90&limit=10000')).json()
    t.equal(ours.count, 545)
  })

  t.test('one item, and errors', async (t) => {
    const one = await get('/ogc/collections/placemarks/items/2')
    t.equal(one.statusCode, 200)
    t.match(one.headers['content-type'], /^application\/geo\+json/)
    const feature = one.json()
    const ours = (await get('/api/v1/placemarks/2?format=geojson')).json()
    t.same({ ...feature, links: undefined }, { ...timed([ours])[0], links: undefined })
    t.equal(feature.links.find((l: Link) => l.rel === 'self').href, `${PUBLIC_URL}/ogc/collections/placemarks/items/2`)
    for (const id of ['999999', 'abc', '0', '99999999999']) {
      const missing = await get(`/ogc/collections/placemarks/items/${id}`)
      t.equal(missing.statusCode, 404, id)
      t.same(missing.json(), { error: 'Not Found', message: `Feature ${id} not found` })
    }
    const unknown = await get('/ogc/collections/other/items')
    t.equal(unknown.statusCode, 404)
    t.same(Object.keys(unknown.json()), ['error', 'message'])
    for (const [query, message] of [
      ['limit=0', 'querystring/limit must be >= 1'],
      ['limit=10001', 'querystring/limit must be <= 10000'],
      ['bbox=1,2,3', 'querystring/bbox must be 4 numbers'],
      ['bbox=a,2,3,4', 'querystring/bbox must be 4 numbers'],
      ['bbox=0,50,1,40', 'querystring/bbox min latitude must be <= max latitude'],
      ['bbox=0,0,200,1', 'querystring/bbox longitudes'],
      ['geometry_type=Circle', 'querystring/geometry_type'],
      ['colour=red', 'colour']
    ]) {
      const res = await get(`/ogc/collections/placemarks/items?${query}`)
      t.equal(res.statusCode, 400, query)
      t.equal(res.json().error, 'Bad Request')
      t.match(res.json().message, message, query)
    }
  })

  t.test('answers are cached per dataset version', async (t) => {
    const first = await get('/ogc/collections/placemarks/items?limit=5')
    t.ok(first.headers.etag)
    const again = await get('/ogc/collections/placemarks/items?limit=5', { 'if-none-match': String(first.headers.etag) })
    t.equal(again.statusCode, 304)
  })
})
