import t, { type Test } from 'tap'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv, { type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, importVegas, openTestDatabase, projectRoot, vegasAbsent } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { summariesToFeatures } from '../../lib/placemarks/box-answer.ts'
import { placemarkFeature } from '../../lib/geo/geojson.ts'
import { BboxCollection, PlacemarkDetailFeature, PlacemarkListCollection, TimelineCollection, TimelineEventsCollection } from '../../schemas/geojson.ts'

const small = join(projectRoot, 'test/fixtures/small.kml')
const GEO = { accept: 'application/geo+json' }

type Position = number[]
interface GeoGeometry { type: string; coordinates: unknown }
interface Feature { type: 'Feature'; id: number; geometry: GeoGeometry; properties: Record<string, unknown> }
interface Collection { type: 'FeatureCollection'; features: Feature[]; [member: string]: unknown }

/** What RFC 7946 asks of a geometry beyond its JSON shape: position sizes and ranges, closed rings of 4 or more positions. */
function rfc7946Problems (g: GeoGeometry): string[] {
  const problems: string[] = []
  const position = (p: Position, where: string) => {
    if (p.length < 2 || p.length > 3 || !p.every(Number.isFinite)) problems.push(`${where}: ${JSON.stringify(p)} is not 2 or 3 numbers`)
    else if (p[0] < -180 || p[0] > 180 || p[1] < -90 || p[1] > 90) problems.push(`${where}: ${JSON.stringify(p)} is out of range`)
  }
  if (g.type === 'Point') position(g.coordinates as Position, 'point')
  else if (g.type === 'LineString') {
    const line = g.coordinates as Position[]
    if (line.length < 2) problems.push('a line of fewer than 2 positions')
    line.forEach((p, i) => position(p, `line position ${i}`))
  } else if (g.type === 'Polygon') {
    const rings = g.coordinates as Position[][]
    if (rings.length < 1) problems.push('a polygon without rings')
    rings.forEach((ring, r) => {
      if (ring.length < 4) problems.push(`ring ${r} has ${ring.length} positions`)
      ring.forEach((p, i) => position(p, `ring ${r} position ${i}`))
      const [first, last] = [ring[0], ring[ring.length - 1]]
      if (!first || !last || first.length !== last.length || first.some((v, i) => v !== last[i])) problems.push(`ring ${r} is not closed`)
    })
  } else problems.push(`unknown geometry type ${g.type}`)
  return problems
}

// CommonJS modules: their classes are the `default` export of the module object.
const { default: AjvClass } = Ajv
const ajv = addFormats.default(new AjvClass({ allErrors: true, strict: true }))
const compiled = new Map<TSchema, ValidateFunction>()
const validator = (schema: TSchema) => {
  let check = compiled.get(schema)
  if (!check) compiled.set(schema, check = ajv.compile(schema))
  return check
}

/** The answer against its schema (Ajv, the validator Fastify uses) and every geometry against RFC 7946's rules. */
function checkGeoJson (t: Test, body: unknown, schema: TSchema, label: string): void {
  const check = validator(schema)
  check(body)
  const errors = (check.errors ?? []).slice(0, 3).map((e) => `${e.instancePath}: ${e.message}`)
  t.same(errors, [], `${label}: matches its GeoJSON schema`)
  const b = body as Collection | Feature
  const features = b.type === 'FeatureCollection' ? b.features : [b]
  const problems = features.flatMap((f) => rfc7946Problems(f.geometry).map((p) => `feature ${f.id}: ${p}`))
  t.same(problems.slice(0, 3), [], `${label}: ${features.length} geometries follow RFC 7946`)
}

async function get (app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  const res = await app.inject({ url, headers })
  return { status: res.statusCode, headers: res.headers, text: res.body, raw: res.rawPayload }
}

/** Each feature equals the JSON placemark field for field, and carries the stored geometry text as it is. */
function samePlacemarks (t: Test, geo: { text: string }, placemarks: Record<string, unknown>[], label: string): void {
  const collection = JSON.parse(geo.text) as Collection
  t.equal(collection.features.length, placemarks.length, `${label}: one feature per placemark`)
  const mismatched: number[] = []
  collection.features.forEach((f, i) => {
    const { geometry, ...properties } = placemarks[i]
    // The JSON placemark's fields, then its resolved style (the tiles' style attributes).
    const { style, ...fields } = f.properties as Record<string, unknown>
    const same = f.type === 'Feature' && f.id === placemarks[i].id &&
      JSON.stringify(fields) === JSON.stringify(properties) && typeof style === 'object' && style !== null &&
      geo.text.includes(`"geometry":${geometry as string},"properties":`)
    if (!same) mismatched.push(placemarks[i].id as number)
  })
  t.same(mismatched, [], `${label}: features equal the JSON placemarks (same order, properties, geometry text)`)
}

t.test('features spliced from serialized summaries equal features written from the objects', async (t) => {
  const tricky = [',"geometry":"{}', '","coordinates_raw":', '},{"id":9', 'back\\slash \\" quote', '\u2028 ünïcödé 🗺', '\u0000\u001f']
  const summaries = tricky.map((text, i) => ({
    id: i + 1,
    name: text,
    description: i % 2 ? null : text,
    style_id: text,
    folder_path: [text, 'A'],
    geometry_type: 'Polygon',
    geometry: JSON.stringify({ type: 'Polygon', coordinates: [[[-115.12345678901234, 36.1], [-115.2, 36.2], [-115.3, 36.1], [-115.12345678901234, 36.1]]] }),
    coordinates_raw: text,
    media_links: [text],
    created_at: '2025-01-01T00:00:00.000Z'
  }))
  const spliced = summariesToFeatures(summaries.map((p) => JSON.stringify(p)).join(','))
  t.equal(spliced, summaries.map(placemarkFeature).join(','))
  t.same(JSON.parse(`[${spliced}]`).map((f: Feature) => f.properties.name), tricky)
  t.equal(summariesToFeatures(''), '', 'no summaries, no features')
})

t.test('GeoJSON answers on the small fixture', async (t) => {
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, createReadStream(small), { timeZone: 'America/Los_Angeles', source: 'small.kml' })
  const app = await buildTestApp(t, handle)

  t.test('the JSON answers are unchanged by the GeoJSON variant', async (t) => {
    const urls = ['/api/v1/placemarks', '/api/v1/placemarks?limit=2&offset=3', '/api/v1/placemarks/4', '/api/v1/timeline', '/api/v1/timeline/events',
      '/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90']
    for (const url of urls) {
      const before = await get(app, url)
      t.equal(before.headers['content-type'], 'application/json; charset=utf-8', `${url}: JSON`)
      const geo = await get(app, url, GEO)
      t.equal(geo.headers['content-type'], 'application/geo+json', `${url}: GeoJSON for Accept: application/geo+json`)
      t.not(geo.text, before.text)
      for (const accept of [undefined, 'application/json', '*/*', 'text/html,application/xhtml+xml,*/*;q=0.8', 'application/geo+json;q=0.5, application/json']) {
        const after = await get(app, url, accept === undefined ? {} : { accept })
        t.equal(after.text, before.text, `${url} with Accept ${accept}: the same JSON bytes`)
        t.equal(after.headers['content-type'], 'application/json; charset=utf-8')
      }
      const explicit = await get(app, `${url}${url.includes('?') ? '&' : '?'}format=json`, GEO)
      t.equal(explicit.text, before.text, `${url}: format=json wins over the Accept header`)
      const viaQuery = await get(app, `${url}${url.includes('?') ? '&' : '?'}format=geojson`)
      t.equal(viaQuery.text, geo.text, `${url}: format=geojson is the same answer`)
      t.equal(viaQuery.headers['content-type'], 'application/geo+json')
    }
  })

  t.test('features, foreign members and antimeridian boxes', async (t) => {
    const list = JSON.parse((await get(app, '/api/v1/placemarks?limit=2&offset=3')).text)
    const geo = await get(app, '/api/v1/placemarks?limit=2&offset=3', GEO)
    const collection = JSON.parse(geo.text) as Collection
    t.same(Object.keys(collection), ['type', 'features', 'limit', 'offset', 'numberMatched', 'numberReturned', 'links'])
    t.equal(collection.limit, 2)
    t.equal(collection.offset, 3)
    samePlacemarks(t, geo, list.placemarks, 'page')
    t.same(collection.features[0].geometry, { type: 'Polygon', coordinates: [[[10, 10], [20, 10], [20, 20], [10, 20], [10, 10]], [[14, 14], [16, 14], [16, 16], [14, 16], [14, 14]]] }, 'a real geometry object, holes kept')
    checkGeoJson(t, collection, PlacemarkListCollection, 'page')

    const across = '/api/v1/spatial/bbox?min_lon=179&min_lat=-17&max_lon=-179&max_lat=-16'
    const json = JSON.parse((await get(app, across)).text)
    const box = await get(app, across, GEO)
    const boxed = JSON.parse(box.text) as Collection
    t.same(boxed.features.map((f) => f.properties.name), ['East of the antimeridian', 'West of the antimeridian'])
    t.same(boxed.query_bbox, json.bbox, 'the box echoed as query_bbox')
    t.equal(boxed.count, 2)
    t.notOk('bbox' in boxed, 'no bbox member of another shape than RFC 7946 gives it')
    samePlacemarks(t, box, json.placemarks, 'antimeridian box')
    checkGeoJson(t, boxed, BboxCollection, 'antimeridian box')

    const one = JSON.parse((await get(app, '/api/v1/placemarks/2', GEO)).text) as Feature
    t.same(one.properties.extended_data, [{ key: 'source', value: 'scanner' }])
    t.same(one.geometry, { type: 'Point', coordinates: [-115.1728, 36.0955] })
    checkGeoJson(t, one, PlacemarkDetailFeature, 'one placemark')

    const timeline = JSON.parse((await get(app, '/api/v1/timeline', GEO)).text) as Collection
    t.same(timeline.features.map((f) => f.id), [7, 2, 3])
    t.equal(timeline.count, 3)
    t.same(timeline.features[2].geometry, { type: 'LineString', coordinates: [[-116, 35.5], [-114, 35.5]] }, 'the placemark\'s geometry, not the centre')
    checkGeoJson(t, timeline, TimelineCollection, 'timeline')
  })

  t.test('the same validation and errors', async (t) => {
    for (const url of ['/api/v1/placemarks?limit=1001', '/api/v1/placemarks?format=xml', '/api/v1/spatial/bbox?min_lon=0&min_lat=1&max_lon=1&max_lat=0',
      '/api/v1/timeline?format=GeoJSON', '/api/v1/placemarks/abc']) {
      const res = await get(app, url, GEO)
      t.equal(res.status, 400, url)
      t.same(Object.keys(JSON.parse(res.text)), ['error', 'message'], `${url}: {error, message}`)
    }
    t.same(JSON.parse((await get(app, '/api/v1/placemarks?format=xml')).text), { error: 'Bad Request', message: 'querystring/format must be equal to one of the allowed values' })
    const missing = await get(app, '/api/v1/placemarks/999?format=geojson')
    t.equal(missing.status, 404)
    t.same(JSON.parse(missing.text), { error: 'Not Found', message: 'Placemark 999 not found' })
    t.equal((await get(app, '/api/v1/folders?format=geojson')).status, 400, 'routes without a GeoJSON answer take no format')
  })

  t.test('caching per variant: ETag, 304, gzip, Vary', async (t) => {
    const url = '/api/v1/placemarks?limit=1000'
    const json = await get(app, url)
    const geo = await get(app, url, GEO)
    t.not(geo.headers.etag, json.headers.etag, 'each variant has its own ETag')
    t.match(geo.headers.vary, /accept-encoding/)
    t.match(json.headers.vary, /(^|, )accept(,|$)/, 'JSON answers vary on Accept too')
    t.match(geo.headers.vary, /(^|, )accept(,|$)/)
    t.equal((await get(app, url, { ...GEO, 'if-none-match': geo.headers.etag as string })).status, 304)
    t.equal((await get(app, url, { 'if-none-match': geo.headers.etag as string })).status, 200, 'the GeoJSON ETag does not validate the JSON answer')
    const again = await get(app, url, GEO)
    t.equal(again.headers.etag, geo.headers.etag, 'served from its own cache entry')
    t.equal(again.text, geo.text)
    const zipped = await get(app, url, { ...GEO, 'accept-encoding': 'gzip' })
    t.equal(zipped.headers['content-encoding'], 'gzip')
    t.equal(zipped.headers['content-type'], 'application/geo+json')
    t.equal(gunzipSync(zipped.raw).toString(), geo.text)
    const bbox = await get(app, '/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90', GEO)
    t.match(bbox.headers.vary, /(^|, )accept(,|$)/, 'the box query varies on Accept')
  })

  t.test('the OpenAPI document lists both content types and the format parameter', async (t) => {
    const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: Record<string, { content: Record<string, unknown> }> }>> }
    for (const path of ['/api/v1/placemarks/', '/api/v1/placemarks/{id}', '/api/v1/spatial/bbox', '/api/v1/timeline/', '/api/v1/timeline/events']) {
      const op = doc.paths[path]?.get ?? doc.paths[path.replace(/\/$/, '')]?.get
      if (!t.ok(op, `${path} documented`)) continue
      t.same(Object.keys(op.responses['200'].content), ['application/json', 'application/geo+json'], `${path}: two content types`)
      t.ok(op.parameters?.some((p) => p.name === 'format'), `${path}: format parameter`)
    }
    await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), 'valid OpenAPI 3')
  })
})

t.test('the Vegas KMZ: every GeoJSON answer equals its JSON answer field for field', { skip: vegasAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  // A thousand requests and more from one address: past the default rate limit.
  const memory = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 100_000 })
  const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0, RATE_LIMIT_MAX: 100_000 })
  await memory.boxIndex.idle()

  const all = JSON.parse((await get(memory, '/api/v1/placemarks?limit=1000')).text) as { placemarks: Record<string, unknown>[] }
  t.equal(all.placemarks.length, 545)
  const geoAll = await get(memory, '/api/v1/placemarks?limit=1000', GEO)
  samePlacemarks(t, geoAll, all.placemarks, 'list')
  checkGeoJson(t, JSON.parse(geoAll.text), PlacemarkListCollection, 'list')
  const types = new Set(all.placemarks.map((p) => p.geometry_type))
  t.ok(types.size >= 2, `geometry types ${[...types].join(', ')}`)

  const folder = (all.placemarks.find((p) => (p.folder_path as string[]).length > 0)?.folder_path as string[])[0]
  for (const url of ['/api/v1/placemarks?limit=50&offset=100', `/api/v1/placemarks?folder=${encodeURIComponent(folder)}&limit=1000`]) {
    const json = JSON.parse((await get(memory, url)).text)
    const geo = await get(memory, url, GEO)
    samePlacemarks(t, geo, json.placemarks, url)
    checkGeoJson(t, JSON.parse(geo.text), PlacemarkListCollection, url)
  }

  // One placemark each: the detail with its extended data.
  let mismatched = 0
  for (const p of all.placemarks) {
    const json = JSON.parse((await get(memory, `/api/v1/placemarks/${p.id}`)).text)
    const geo = await get(memory, `/api/v1/placemarks/${p.id}?format=geojson`)
    const feature = JSON.parse(geo.text) as Feature
    const { geometry, ...properties } = json
    const { style, ...fields } = feature.properties
    if (JSON.stringify(fields) !== JSON.stringify(properties) || typeof style !== 'object' || !geo.text.includes(`"geometry":${geometry}`) ||
      rfc7946Problems(feature.geometry).length || !validator(PlacemarkDetailFeature)(feature)) mismatched++
  }
  t.equal(mismatched, 0, `${all.placemarks.length} single features equal their JSON placemarks and follow RFC 7946`)

  // Boxes around the data, from memory and from the database.
  const xs = all.placemarks.map((p) => JSON.parse(p.geometry as string)).map((g) => (g.type === 'Point' ? g.coordinates : g.type === 'LineString' ? g.coordinates[0] : g.coordinates[0][0]) as number[])
  const urls = ['/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=10000', '/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=7']
  for (let i = 0; i < 20; i++) {
    const [x, y] = xs[(i * 37) % xs.length]
    urls.push(`/api/v1/spatial/bbox?min_lon=${x - 0.01 * i}&min_lat=${y - 0.01}&max_lon=${x + 0.02}&max_lat=${y + 0.005 * i}`)
  }
  for (const url of urls) {
    const json = JSON.parse((await get(memory, url)).text)
    const geo = await get(memory, url, GEO)
    samePlacemarks(t, geo, json.placemarks, url)
    const collection = JSON.parse(geo.text) as Collection
    t.same([collection.count, collection.query_bbox], [json.count, json.bbox], `${url}: count and box`)
    checkGeoJson(t, collection, BboxCollection, url)
    t.equal((await get(database, url, GEO)).text, geo.text, `${url}: the database path answers the same bytes`)
  }

  const timeline = JSON.parse((await get(memory, '/api/v1/timeline')).text) as { events: Record<string, unknown>[]; count: number }
  const geoTimeline = JSON.parse((await get(memory, '/api/v1/timeline', GEO)).text) as Collection
  t.ok(timeline.count > 100, `${timeline.count} events`)
  t.equal(geoTimeline.count, timeline.count)
  t.same(geoTimeline.features.map((f) => f.properties), timeline.events, 'timeline: the events as properties, in order')
  t.same(geoTimeline.features.map((f) => f.id), timeline.events.map((e) => e.placemark_id))
  const byId = new Map(all.placemarks.map((p) => [p.id, p.geometry as string]))
  t.same(geoTimeline.features.filter((f) => JSON.stringify(f.geometry) !== byId.get(f.id)).map((f) => f.id), [], 'each event carries its placemark\'s geometry')
  checkGeoJson(t, geoTimeline, TimelineCollection, 'timeline')
  const events = JSON.parse((await get(memory, '/api/v1/timeline/events', GEO)).text) as Collection
  t.same(events.features, geoTimeline.features)
  checkGeoJson(t, events, TimelineEventsCollection, 'timeline events')
})
