import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../schemas/common.ts'
import {
  Collection, Collections, Conformance, FeatureParams, FeatureSchema, ItemsQuery, LandingPage, OGC_COLLECTION, OgcFeature, OgcFeatureCollection, OgcQuery, Queryables,
  type CollectionT, type LinkT
} from '../../schemas/ogc.ts'
import { filteredPlacemarks, placemarkTimeOf, type ItemFilter } from '../../db/ogc.ts'
import { datasetFacts } from '../../db/dataset-facts.ts'
import { getPlacemark } from '../../db/placemarks.ts'
import { HttpError } from '../../lib/errors.ts'
import { collectionText, GEOJSON_TYPE, styledPlacemarkFeature } from '../../lib/geo/geojson.ts'
import type { Box } from '../../lib/geo/box.ts'
import { kmlTimeRange } from '../../lib/kml/time.ts'
import { openapiExamples } from '../../plugins/app/geojson.ts'

const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84'
const JSON_TYPE = 'application/json'
const SCHEMA_TYPE = 'application/schema+json'
const OPENAPI_TYPE = 'application/vnd.oai.openapi+json;version=3.0'
export const CONFORMANCE = [
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
  'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30'
]
const MAX_ID = 2147483647

/** `minlon,minlat,maxlon,maxlat` (or 6 numbers with heights) as a box; a 400 naming the problem otherwise. */
export function parseBbox (text: string): Box {
  const parts = text.split(',')
  const values = parts.map((p) => (p.trim() === '' ? NaN : Number(p)))
  if ((values.length !== 4 && values.length !== 6) || !values.every(Number.isFinite)) {
    throw new HttpError(400, 'querystring/bbox must be 4 numbers (minlon,minlat,maxlon,maxlat) or 6 with heights, separated by commas')
  }
  const [minLon, minLat, maxLon, maxLat] = values.length === 4 ? values : [values[0], values[1], values[3], values[4]]
  if ([minLon, maxLon].some((v) => v < -180 || v > 180)) throw new HttpError(400, 'querystring/bbox longitudes must be in [-180, 180]')
  if ([minLat, maxLat].some((v) => v < -90 || v > 90)) throw new HttpError(400, 'querystring/bbox latitudes must be in [-90, 90]')
  if (minLat > maxLat) throw new HttpError(400, 'querystring/bbox min latitude must be <= max latitude')
  return { minLon, minLat, maxLon, maxLat }
}

/**
 * `datetime`: an instant or a date (the period it names, as KML's forms: year, month, day, date-time), or
 * an interval `start/end` with `..` or nothing for an open end; as the instants [from, to].
 */
export function parseDatetime (text: string): { from: string | null; to: string | null } {
  const bad = () => new HttpError(400, 'querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end')
  // GDAL's OAPIF driver writes a date it pushes down from a DateTime field's filter as `2017-10-01T`: the date.
  const parts = text.split('/').map((part) => part.replace(/^(\d{4}-\d{2}-\d{2})T$/, '$1'))
  if (parts.length > 2) throw bad()
  const open = (v: string) => v === '..' || v === ''
  if (parts.length === 1) {
    const range = kmlTimeRange(parts[0])
    if (!range) throw bad()
    return { from: range.begin, to: range.end }
  }
  const [a, b] = parts
  if (open(a) && open(b)) throw bad()
  const from = open(a) ? null : kmlTimeRange(a)?.begin
  const to = open(b) ? null : kmlTimeRange(b)?.end
  if (from === undefined || to === undefined) throw bad()
  if (from !== null && to !== null && from > to) throw new HttpError(400, 'querystring/datetime must not end before it starts')
  return { from, to }
}

// Ids of serialized summaries: each begins with `{"id":`, which cannot occur inside a JSON string (its quotes are escaped).
const SUMMARY_ID = /\{"id":(\d+),/g

const ogc: FastifyPluginAsyncTypebox = async (app) => {
  // Absolute links from the configured public address: answers are cached and shared by every client,
  // so they cannot follow one request's Host header.
  const base = `${app.config.PUBLIC_URL}/ogc`
  const link = (href: string, rel: string, type: string, title?: string): LinkT => ({ href, rel, type, ...(title ? { title } : {}) })
  const collectionUrl = `${base}/collections/${OGC_COLLECTION}`

  async function collection (): Promise<CollectionT> {
    const facts = (await datasetFacts(app.db))?.facts
    const [extent, time] = [facts?.extent ?? null, facts?.time_extent ?? null]
    return {
      id: OGC_COLLECTION,
      title: 'Placemarks',
      description: 'Every placemark of the imported KML/KMZ dataset (points, lines and polygons)',
      itemType: 'feature',
      crs: [CRS84],
      extent: {
        spatial: { bbox: [extent ?? [-180, -90, 180, 90]], crs: CRS84 },
        temporal: { interval: [time ?? [null, null]], trs: 'http://www.opengis.net/def/uom/ISO-8601/0/Gregorian' }
      },
      links: [
        link(collectionUrl, 'self', JSON_TYPE, 'This collection'),
        link(`${collectionUrl}/items`, 'items', GEOJSON_TYPE, 'The placemarks'),
        link(`${collectionUrl}/queryables`, 'http://www.opengis.net/def/rel/ogc/1.0/queryables', 'application/schema+json', 'The properties to filter on'),
        link(`${collectionUrl}/schema`, 'describedby', SCHEMA_TYPE, 'The JSON Schema of the features'),
        // The same, under the spelling GDAL's OAPIF driver (QGIS) looks for: it types the fields from it.
        link(`${collectionUrl}/schema`, 'describedBy', SCHEMA_TYPE, 'The JSON Schema of the features')
      ]
    }
  }

  const tags = ['OGC API - Features']
  const common = errors(429, 503)

  app.get('/', {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcLandingPage',
      querystring: OgcQuery,
      summary: 'OGC API - Features landing page',
      description: 'The entry point GIS clients (QGIS, GDAL\'s OAPIF driver) are given: links to the API definition, the conformance classes and the collections.',
      response: { 200: answer(LandingPage, 'The landing page with its links'), ...common }
    }
  }, async () => ({
    title: 'Placemarks',
    description: 'The imported placemark dataset as OGC API - Features (Part 1: Core, GeoJSON, OpenAPI 3.0)',
    links: [
      link(base, 'self', JSON_TYPE, 'This document'),
      link(`${app.config.PUBLIC_URL}/api/docs/json`, 'service-desc', OPENAPI_TYPE, 'The API definition (OpenAPI 3.0)'),
      link(`${app.config.PUBLIC_URL}/api/docs`, 'service-doc', 'text/html', 'The API documentation'),
      link(`${base}/conformance`, 'conformance', JSON_TYPE, 'The conformance classes implemented'),
      link(`${base}/collections`, 'data', JSON_TYPE, 'The feature collections')
    ]
  }))

  app.get('/conformance', {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcConformance',
      querystring: OgcQuery,
      summary: 'OGC API - Features conformance classes',
      description: 'The conformance classes implemented: Core, GeoJSON and OpenAPI 3.0.',
      response: { 200: answer(Conformance, 'The conformance classes'), ...common }
    }
  }, async () => ({ conformsTo: CONFORMANCE }))

  app.get('/api', {
    schema: {
      tags,
      operationId: 'ogcApiDefinition',
      summary: 'The API definition',
      description: 'Redirects to the OpenAPI 3.0 document of the whole service (`/api/docs/json`), which documents the OGC routes too.',
      response: {
        302: { description: 'Redirect to `/api/docs/json`', type: 'null', headers: { location: { type: 'string', description: 'The OpenAPI document\'s address', example: '/api/docs/json' } } },
        ...common
      }
    }
  }, async (_request, reply) => reply.redirect('/api/docs/json'))

  app.get('/collections', {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcCollections',
      querystring: OgcQuery,
      summary: 'The feature collections',
      description: 'The one collection, `placemarks`, with its spatial extent and its temporal extent (the KML times of its placemarks; `[[null, null]]` when none has a time).',
      response: { 200: answer(Collections, 'The collections'), ...common }
    }
  }, async () => ({
    links: [link(`${base}/collections`, 'self', JSON_TYPE, 'This document')],
    collections: [await collection()]
  }))

  app.get(`/collections/${OGC_COLLECTION}`, {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcPlacemarksCollection',
      querystring: OgcQuery,
      summary: 'The placemarks collection',
      description: 'The `placemarks` collection: its spatial extent (the data\'s bounding box in CRS84) and links to its items and queryables.',
      response: { 200: answer(Collection, 'The collection'), ...common }
    }
  }, collection)

  app.get(`/collections/${OGC_COLLECTION}/queryables`, {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcPlacemarksQueryables',
      querystring: OgcQuery,
      summary: 'The properties the items can be filtered on',
      description: 'A JSON Schema of the properties with a filter parameter on the items: `folder` (a name in `folder_path`) and `geometry_type`, and `time_begin`/`time_end` (date-time), which `datetime` filters on.',
      response: {
        200: {
          description: 'The queryables (JSON Schema)',
          content: { 'application/schema+json': { schema: openapiExamples(Queryables) } }
        },
        ...common
      }
    }
  }, async (_request, reply) => {
    const body = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `${collectionUrl}/queryables`,
      type: 'object' as const,
      title: 'Placemarks',
      properties: {
        geometry: { $ref: 'https://geojson.org/schema/Geometry.json' },
        folder: { type: 'string', title: 'A folder name at any level of folder_path' },
        geometry_type: { type: 'string', enum: ['Point', 'LineString', 'Polygon'], title: 'The KML geometry' },
        time_begin: { type: 'string', format: 'date-time', title: 'The start of the KML time (UTC); filtered with `datetime`' },
        time_end: { type: 'string', format: 'date-time', title: 'The end of the KML time (UTC); filtered with `datetime`' }
      },
      additionalProperties: false
    }
    return reply.type(SCHEMA_TYPE).send(Buffer.from(JSON.stringify(body)) as never)
  })

  app.get(`/collections/${OGC_COLLECTION}/schema`, {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcPlacemarksSchema',
      summary: 'The JSON Schema of the features',
      description: 'A JSON Schema (draft 2020-12) of a placemark feature and its properties, linked from the collection as `describedby`. GIS clients type their fields from it: ' +
        '`created_at`, `time_begin` and `time_end` are date-times, `folder_path` and `media_links` lists of strings. Each property has one type; a property that may be absent is null then (its description says so).',
      querystring: OgcQuery,
      response: {
        200: {
          description: 'The features\' JSON Schema',
          content: { [SCHEMA_TYPE]: { schema: openapiExamples(FeatureSchema) } }
        },
        ...common
      }
    }
  }, async (_request, reply) => {
    const text = (title: string) => ({ type: 'string', title })
    const strings = (title: string) => ({ type: 'array', items: { type: 'string' }, title })
    const body = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `${collectionUrl}/schema`,
      type: 'object' as const,
      title: 'Placemark',
      properties: {
        type: { type: 'string', enum: ['Feature'] },
        id: { type: 'integer', title: 'The placemark id' },
        geometry: { $ref: 'https://geojson.org/schema/Geometry.json' },
        properties: {
          type: 'object',
          // `id` is left out here: GDAL takes it from the features, and a second definition would give it two fields of that name.
          properties: {
            name: text('The name as written in the KML'),
            description: text('The KML description (may hold HTML); null when absent'),
            style_id: text('The styleUrl without its #; null when absent'),
            folder_path: strings('The enclosing folder names, outermost first'),
            geometry_type: { type: 'string', enum: ['Point', 'LineString', 'Polygon'], title: 'The KML geometry' },
            coordinates_raw: text('The KML coordinates text; null when absent'),
            media_links: strings('The gx_media_links URLs'),
            created_at: { type: 'string', format: 'date-time', title: 'When the placemark was imported (UTC)' },
            time_begin: { type: 'string', format: 'date-time', title: 'The start of the KML time (UTC); null when open or absent' },
            time_end: { type: 'string', format: 'date-time', title: 'The end of the KML time (UTC), inclusive; null when open or absent' }
          }
        }
      }
    }
    reply.type(SCHEMA_TYPE)
    return Buffer.from(JSON.stringify(body)) as never
  })

  app.get(`/collections/${OGC_COLLECTION}/items`, {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcPlacemarkItems',
      summary: 'Placemarks as GeoJSON features, paged and filtered',
      description: 'One page of placemarks in id order as a GeoJSON FeatureCollection with `numberMatched`, `numberReturned`, `timeStamp` and `self`/`next`/`prev`/`collection` links. ' +
        '`bbox` keeps placemarks whose geometry intersects the box (as `/api/v1/spatial/bbox`, antimeridian included); `folder` and `geometry_type` as their names say; `q` keeps placemarks whose name or description holds every word, case-insensitively. Features carry the properties of the GeoJSON list.',
      querystring: ItemsQuery,
      response: {
        200: { description: 'The page of features', content: { [GEOJSON_TYPE]: { schema: openapiExamples(OgcFeatureCollection) } } },
        ...errors(
          fail(400, 'A parameter is out of range, malformed or unknown', 'querystring/limit must be <= 10000', 'querystring/bbox must be 4 numbers (minlon,minlat,maxlon,maxlat) or 6 with heights, separated by commas'),
          429, 503)
      }
    }
  }, async (request, reply) => {
    const { limit, offset, bbox, datetime, folder, geometry_type: geometryType, q } = request.query
    const filter: ItemFilter = { folder, geometryType, q, datetime: datetime === undefined ? undefined : parseDatetime(datetime) }
    if (bbox !== undefined) {
      // The box query's path (the in-memory index, or the database's GiST index and exact test).
      const summaries = await app.boxIndex.query(parseBbox(bbox), Number.MAX_SAFE_INTEGER)
      const text = Buffer.allocUnsafe(summaries.byteLength)
      summaries.copyTo(text, 0)
      filter.ids = Array.from(text.toString().matchAll(SUMMARY_ID), (m) => Number(m[1]))
    }
    const { placemarks, matched } = await filteredPlacemarks(app.db, filter, limit, offset)
    const url = (at: number) => {
      const params = new URLSearchParams({ limit: String(limit), offset: String(at) })
      if (bbox !== undefined) params.set('bbox', bbox)
      if (datetime !== undefined) params.set('datetime', datetime)
      if (folder !== undefined) params.set('folder', folder)
      if (geometryType !== undefined) params.set('geometry_type', geometryType)
      if (q !== undefined) params.set('q', q)
      return `${collectionUrl}/items?${params}`
    }
    const links = [link(url(offset), 'self', GEOJSON_TYPE, 'This page'), link(collectionUrl, 'collection', JSON_TYPE, 'The collection')]
    if (offset + placemarks.length < matched) links.push(link(url(offset + limit), 'next', GEOJSON_TYPE, 'The next page'))
    if (offset > 0) links.push(link(url(Math.max(0, offset - limit)), 'prev', GEOJSON_TYPE, 'The previous page'))
    // The properties of the GeoJSON answers, the resolved KML style included, with the KML time.
    return reply.geojson(collectionText(placemarks.map(styledPlacemarkFeature(await app.tiles.styles())), {
      numberMatched: matched,
      numberReturned: placemarks.length,
      timeStamp: new Date().toISOString(),
      links
    }))
  })

  app.get(`/collections/${OGC_COLLECTION}/items/:featureId`, {
    config: { datasetCache: true },
    schema: {
      tags,
      operationId: 'ogcPlacemarkItem',
      querystring: OgcQuery,
      summary: 'One placemark as a GeoJSON feature',
      description: 'The placemark with this id as a Feature, with its extended data among the properties; 404 for an id that is not a placemark\'s.',
      params: FeatureParams,
      response: {
        200: { description: 'The feature', content: { [GEOJSON_TYPE]: { schema: openapiExamples(OgcFeature) } } },
        ...errors(fail(404, 'No placemark has this id', 'Feature 999999 not found'), 429, 503)
      }
    }
  }, async (request, reply) => {
    const { featureId } = request.params
    const id = /^[1-9]\d{0,9}$/.test(featureId) ? Number(featureId) : NaN
    const [placemark, time] = id <= MAX_ID ? await Promise.all([getPlacemark(app.db, id), placemarkTimeOf(app.db, id)]) : []
    if (!placemark || !time) throw new HttpError(404, `Feature ${featureId} not found`)
    const links = [
      link(`${collectionUrl}/items/${id}`, 'self', GEOJSON_TYPE, 'This feature'),
      link(collectionUrl, 'collection', JSON_TYPE, 'The collection')
    ]
    const feature = styledPlacemarkFeature(await app.tiles.styles())({ ...placemark, ...time })
    return reply.geojson(`${feature.slice(0, -1)},"links":${JSON.stringify(links)}}`)
  })
}

export default ogc
