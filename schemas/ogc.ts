import type { Static } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { Nullable } from './common.ts'
import { Geometry, Link, PlacemarkStyle } from './geojson.ts'
import { GeometryType, KeyValue } from './placemarks.ts'

// OGC API - Features - Part 1: Core (OGC 17-069r4), the shapes its JSON and GeoJSON answers take.

export const OGC_COLLECTION = 'placemarks'

export { Link }
export type LinkT = Static<typeof Link>

const links = Type.Array(Link, { description: 'Links to this resource and its neighbours' })

export const LandingPage = Type.Object({
  title: Type.String({ examples: ['Placemarks'] }),
  description: Type.String({ examples: ['The imported placemark dataset as OGC API - Features'] }),
  links
}, { title: 'OgcLandingPage', additionalProperties: false })

export const Conformance = Type.Object({
  conformsTo: Type.Array(Type.String({ format: 'uri' }), {
    description: 'The conformance classes implemented',
    examples: [['http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core']]
  })
}, { title: 'OgcConformance', additionalProperties: false })

export const Collection = Type.Object({
  id: Type.String({ examples: [OGC_COLLECTION] }),
  title: Type.String({ examples: ['Placemarks'] }),
  description: Type.String({ examples: ['Every placemark of the imported KML/KMZ dataset'] }),
  itemType: Type.Literal('feature'),
  crs: Type.Array(Type.String(), { examples: [['http://www.opengis.net/def/crs/OGC/1.3/CRS84']] }),
  extent: Type.Object({
    spatial: Type.Object({
      bbox: Type.Array(Type.Array(Type.Number(), { minItems: 4, maxItems: 4 }), { description: 'The data\'s extent, [min lon, min lat, max lon, max lat] (the whole world when empty)', examples: [[[-115.3, 36.0, -115.0, 36.3]]] }),
      crs: Type.String({ examples: ['http://www.opengis.net/def/crs/OGC/1.3/CRS84'] })
    }, { additionalProperties: false }),
    temporal: Type.Object({
      interval: Type.Array(Type.Array(Nullable(Type.String())), { description: 'The data\'s time span; [[null, null]] when unknown', examples: [[[null, null]]] }),
      trs: Type.String({ examples: ['http://www.opengis.net/def/uom/ISO-8601/0/Gregorian'] })
    }, { additionalProperties: false })
  }, { additionalProperties: false }),
  links
}, { title: 'OgcCollection', additionalProperties: false })
export type CollectionT = Static<typeof Collection>

export const Collections = Type.Object({
  links,
  collections: Type.Array(Collection)
}, { title: 'OgcCollections', additionalProperties: false })

const folderPath = Type.Array(Type.String())
const OgcProperties = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Nullable(Type.String()),
  style_id: Nullable(Type.String()),
  folder_path: folderPath,
  geometry_type: GeometryType,
  coordinates_raw: Nullable(Type.String()),
  media_links: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  extended_data: Type.Optional(Type.Array(KeyValue)),
  time_begin: Nullable(Type.String({ format: 'date-time', description: 'Start of the KML TimeStamp or TimeSpan (UTC); null when open or absent' })),
  time_end: Nullable(Type.String({ format: 'date-time', description: 'End of the KML TimeStamp or TimeSpan (UTC), inclusive; null when open or absent' })),
  style: Type.Optional(PlacemarkStyle)
}, { additionalProperties: false })

export const OgcFeature = Type.Object({
  type: Type.Literal('Feature'),
  id: Type.Integer({ description: 'The placemark id' }),
  geometry: Geometry,
  properties: OgcProperties,
  links: Type.Optional(links)
}, { title: 'OgcFeature', additionalProperties: false })

export const OgcFeatureCollection = Type.Object({
  type: Type.Literal('FeatureCollection'),
  features: Type.Array(OgcFeature),
  numberMatched: Type.Integer({ description: 'Features matching the filters, over all pages' }),
  numberReturned: Type.Integer({ description: 'Features in this page' }),
  timeStamp: Type.String({ format: 'date-time', description: 'When the answer was computed (it is kept until the next import)' }),
  links
}, { title: 'OgcFeatureCollection', additionalProperties: false })

// `f`, the answer's format as OGC API clients name it: these answers are JSON (GeoJSON for features) either way.
const OgcFormat = Type.Optional(Type.Unsafe<'json' | 'geojson'>({
  type: 'string',
  enum: ['json', 'geojson'],
  description: 'The answer\'s format, as OGC API clients send it: `json` or `geojson`, the same answer either way (an HTML answer is not offered)'
}))

/** The query of the OGC routes that take no other parameter. */
export const OgcQuery = Type.Object({ f: OgcFormat }, { additionalProperties: false })

/** `datetime`, as the OGC items, the tiles and the KML export take it (parsed by parseDatetime in routes/ogc). */
export const DatetimeParam = Type.String({
  maxLength: 100,
  description: 'Only placemarks whose KML time intersects this: an instant or a date (year, year-month, date or RFC 3339 date-time: the period it names), or an interval `start/end` with `..` for an open end',
  examples: ['2017-10-01T00:00:00Z/..', '2017-10-01']
})

export const ItemsQuery = Type.Object({
  f: OgcFormat,
  limit: Type.Integer({ minimum: 1, maximum: 10000, default: 10, description: 'Page size, 1..10000 (default 10)', examples: [10] }),
  offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0, description: 'Features to skip, >= 0 (default 0); the `next` and `prev` links carry it', examples: [0] }),
  bbox: Type.Optional(Type.String({
    maxLength: 200,
    description: 'Only features intersecting this box, `minlon,minlat,maxlon,maxlat` in CRS84 (6 numbers with heights are accepted, heights ignored); minlon > maxlon crosses the antimeridian',
    examples: ['-115.18,36.09,-115.16,36.11']
  })),
  datetime: Type.Optional(DatetimeParam),
  folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only placemarks with a folder of exactly this name at any level of their path', examples: ['Las Vegas Strip'] })),
  q: Type.Optional(Type.String({ maxLength: 500, description: 'Text search: whitespace-separated words (at most 16), each of which must appear in the name or the description, case-insensitively', examples: ['tropicana'] })),
  geometry_type: Type.Optional(Type.Unsafe<'Point' | 'LineString' | 'Polygon'>({ type: 'string', enum: ['Point', 'LineString', 'Polygon'], description: 'Only placemarks of this geometry type' }))
}, { additionalProperties: false })

export const FeatureParams = Type.Object({
  featureId: Type.String({ minLength: 1, maxLength: 32, description: 'The placemark id', examples: ['2'] })
})

// Its `$schema` and `$id` members are not listed: the OpenAPI document's resolver would take them for the schema's own.
export const Queryables = Type.Object({
  type: Type.Literal('object'),
  title: Type.String(),
  properties: Type.Record(Type.String(), Type.Object({}, { additionalProperties: true })),
  additionalProperties: Type.Boolean()
}, { title: 'OgcQueryables', description: 'A JSON Schema (draft 2020-12, with its `$schema` and `$id`) of the properties the items filter on', additionalProperties: true })

// Its `$schema` and `$id` members are not listed, for the same reason.
export const FeatureSchema = Type.Object({
  type: Type.Literal('object'),
  title: Type.String(),
  properties: Type.Record(Type.String(), Type.Object({}, { additionalProperties: true }))
}, { title: 'OgcFeatureSchema', description: 'A JSON Schema (draft 2020-12, with its `$schema` and `$id`) of a feature: its `type`, `id`, `geometry` and `properties`', additionalProperties: true })
