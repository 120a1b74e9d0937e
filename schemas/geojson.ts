import type { TObject, TProperties, TSchema } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { PlacemarkDetail, PlacemarkSummary, TimelineEvent } from './placemarks.ts'

/**
 * RFC 7946 GeoJSON, as the placemark routes answer it with `Accept: application/geo+json` or
 * `format=geojson`. Positions are [longitude, latitude] (an altitude may follow); OpenAPI 3.0 cannot
 * give each item of an array its own range, so the ranges are written in the description.
 */
export const Position = Type.Array(Type.Number(), {
  minItems: 2,
  maxItems: 3,
  description: '[longitude, latitude] in WGS 84 (longitude in [-180, 180], latitude in [-90, 90]), an altitude may follow'
})

export const PointGeometry = Type.Object({
  type: Type.Literal('Point'),
  coordinates: Position
}, { title: 'GeoJSON Point', additionalProperties: false })

export const LineStringGeometry = Type.Object({
  type: Type.Literal('LineString'),
  coordinates: Type.Array(Position, { minItems: 2 })
}, { title: 'GeoJSON LineString', additionalProperties: false })

export const LinearRing = Type.Array(Position, { minItems: 4, description: 'A closed ring: its last position equals its first' })

export const PolygonGeometry = Type.Object({
  type: Type.Literal('Polygon'),
  coordinates: Type.Array(LinearRing, { minItems: 1, description: 'The outer ring, then the holes' })
}, { title: 'GeoJSON Polygon', additionalProperties: false })

/** A link of the OGC API kind (RFC 8288 in JSON), as the OGC answers and the GeoJSON list carry them. */
export const Link = Type.Object({
  href: Type.String({ format: 'uri', description: 'The link target, an absolute URL', examples: ['http://localhost:8080/ogc/collections'] }),
  rel: Type.String({ description: 'The relation (self, next, prev, collection, data, conformance, service-desc, ...)', examples: ['data'] }),
  type: Type.Optional(Type.String({ description: 'Media type of the target', examples: ['application/json'] })),
  title: Type.Optional(Type.String({ description: 'What the target is, in words', examples: ['The feature collections'] }))
}, { title: 'OgcLink', additionalProperties: false })

export const Geometry = Type.Union([PointGeometry, LineStringGeometry, PolygonGeometry], { title: 'GeoJSON geometry' })

/** A Feature whose properties follow the given schema; its id is the placemark id. */
export function FeatureOf<P extends TProperties> (properties: TObject<P>, title: string) {
  return Type.Object({
    type: Type.Literal('Feature'),
    id: Type.Integer({ description: 'The placemark id' }),
    geometry: Geometry,
    properties
  }, { title, additionalProperties: false })
}

/** A FeatureCollection of such features, with the answer's other members after `features`. */
export function FeatureCollectionOf<F extends TSchema, M extends TProperties> (feature: F, members: M, title: string) {
  return Type.Object({
    type: Type.Literal('FeatureCollection'),
    features: Type.Array(feature),
    ...members
  }, { title, additionalProperties: false })
}

// A placemark's fields other than its geometry, which the feature carries as a GeoJSON object.
// Its resolved KML style (lib/kml/resolved-style.ts), under the names the vector tiles' attributes have.
export const PlacemarkStyle = Type.Object({
  color: Type.Optional(Type.String({ pattern: '^#[0-9a-f]{8}$', description: 'The icon colour (points) or line colour (lines, polygon outlines), CSS #rrggbbaa (KML\'s aabbggrr turned round)', examples: ['#d32f2fff'] })),
  fill: Type.Optional(Type.String({ pattern: '^#[0-9a-f]{8}$', description: 'The polygon fill colour, CSS #rrggbbaa', examples: ['#1e88e566'] })),
  width: Type.Optional(Type.Number({ minimum: 0, description: 'The line width in pixels', examples: [3] })),
  icon: Type.Optional(Type.String({ description: 'The icon\'s href, when the style names one', examples: ['https://example.org/icons/red-pin.png'] }))
}, { additionalProperties: false, description: 'The placemark\'s resolved KML style (a StyleMap\'s normal pair); each member absent when the style does not say, {} without a style' })
const PlacemarkProperties = Type.Object({ ...Type.Omit(PlacemarkSummary, ['geometry']).properties, style: Type.Optional(PlacemarkStyle) }, { additionalProperties: false })
const PlacemarkDetailProperties = Type.Object({ ...Type.Omit(PlacemarkDetail, ['geometry']).properties, style: Type.Optional(PlacemarkStyle) }, { additionalProperties: false })

export const PlacemarkFeature = FeatureOf(PlacemarkProperties, 'PlacemarkFeature')
export const PlacemarkDetailFeature = FeatureOf(PlacemarkDetailProperties, 'PlacemarkWithExtendedDataFeature')
export const TimelineFeature = FeatureOf(Type.Object(TimelineEvent.properties, { additionalProperties: false }), 'TimelineEventFeature')

export const PlacemarkListCollection = FeatureCollectionOf(PlacemarkFeature, {
  limit: Type.Integer(),
  offset: Type.Integer(),
  numberMatched: Type.Integer({ description: 'Placemarks matching the filters over all pages (as the OGC items count them)' }),
  numberReturned: Type.Integer({ description: 'Features in this page' }),
  links: Type.Array(Link, { description: '`self`, and `next` / `prev` when there is a page after / before this one (absolute, GeoJSON, with the same filters)' })
}, 'PlacemarkFeatureCollection')

export const BboxCollection = FeatureCollectionOf(PlacemarkFeature, {
  query_bbox: Type.Object({ min_lon: Type.Number(), min_lat: Type.Number(), max_lon: Type.Number(), max_lat: Type.Number() }, {
    description: 'The box asked for (the JSON answer\'s `bbox`; GeoJSON reserves that name for an array of the features\' extent)'
  }),
  count: Type.Integer()
}, 'BboxFeatureCollection')

export const TimelineCollection = FeatureCollectionOf(TimelineFeature, { count: Type.Integer() }, 'TimelineFeatureCollection')
export const TimelineEventsCollection = FeatureCollectionOf(TimelineFeature, {}, 'TimelineEventFeatureCollection')

/** The `format` query parameter of the routes that can answer GeoJSON. */
export const FormatQuery = Type.Unsafe<'json' | 'geojson'>({
  type: 'string',
  enum: ['json', 'geojson'],
  description: '`geojson` answers RFC 7946 GeoJSON (`application/geo+json`), as `Accept: application/geo+json` does; for tools that cannot set headers. ' +
    'Takes precedence over the Accept header; the default is JSON.'
})

/** `f`, the name OGC API clients give the `format` parameter: the same values and meaning. */
export const FormatAliasQuery = Type.Unsafe<'json' | 'geojson'>({
  type: 'string',
  enum: ['json', 'geojson'],
  description: 'Another name for `format` (the one OGC API clients send, as in `?f=geojson`), with the same values and meaning; when both are given they must agree.'
})
