import { Type, type Static } from '@sinclair/typebox'
import { Nullable } from './common.ts'

export const GeometryType = Type.Union([Type.Literal('Point'), Type.Literal('LineString'), Type.Literal('Polygon')])

export const PlacemarkSummary = Type.Object({
  id: Type.Integer({ description: 'Identifier; ids follow document order of the imported file', examples: [1] }),
  name: Type.String({ examples: ['10/1/2017  10:09:48 PM - Shots fired'] }),
  description: Nullable(Type.String()),
  style_id: Nullable(Type.String({ description: 'The placemark\'s styleUrl without the leading #' })),
  folder_path: Type.Array(Type.String(), { description: 'Enclosing folder names, outermost first; [] at document level' }),
  geometry_type: GeometryType,
  geometry: Type.String({ description: 'GeoJSON geometry serialized as a JSON string, [lon, lat] positions', examples: ['{"type":"Point","coordinates":[-115.1728,36.0955]}'] }),
  coordinates_raw: Nullable(Type.String({ description: 'The KML <coordinates> text (for polygons the outer ring), whitespace collapsed' })),
  media_links: Type.Array(Type.String(), { description: 'URLs from the gx_media_links data field' }),
  created_at: Type.String({ format: 'date-time', description: 'When the placemark was imported (UTC)' })
}, { title: 'Placemark' })

export const KeyValue = Type.Object({ key: Type.String(), value: Type.String() })

export const PlacemarkDetail = Type.Composite([
  PlacemarkSummary,
  Type.Object({ extended_data: Type.Array(KeyValue, { description: 'Every other ExtendedData Data and SchemaData/SimpleData entry, in document order' }) })
], { title: 'PlacemarkWithExtendedData' })

export const TimelineEvent = Type.Object({
  timestamp: Nullable(Type.String({ format: 'date-time', description: 'UTC instant of the time in the name, converted from the import timezone; null when the name has a date but no (valid) time' })),
  date: Type.String({ format: 'date', description: 'Local calendar date written in the name' }),
  name: Type.String(),
  description: Nullable(Type.String()),
  location: Nullable(Type.Object({ lat: Type.Number(), lon: Type.Number() }, { description: 'The point, or the centre of a line\'s or polygon\'s bounding box' })),
  media_links: Type.Array(Type.String()),
  placemark_id: Type.Integer(),
  folder_path: Type.Array(Type.String())
}, { title: 'TimelineEvent' })

export const ListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1..1000' }),
  offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0, description: 'Number of placemarks to skip' }),
  folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only placemarks with a folder of exactly this name at any level of their path' }))
}, { additionalProperties: false })

export const PlacemarkList = Type.Object({
  placemarks: Type.Array(PlacemarkSummary),
  limit: Type.Integer(),
  offset: Type.Integer()
})

export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Placemark id' })
})

const Longitude = Type.Number({ minimum: -180, maximum: 180 })
const Latitude = Type.Number({ minimum: -90, maximum: 90 })

export const BboxQuery = Type.Object({
  min_lon: Type.Number({ minimum: -180, maximum: 180, description: 'West edge; greater than max_lon for a box crossing the antimeridian' }),
  min_lat: Latitude,
  max_lon: Longitude,
  max_lat: Latitude,
  limit: Type.Integer({ minimum: 1, maximum: 10000, default: 1000, description: 'Result cap, 1..10000' })
}, { additionalProperties: false })

export const BboxResponse = Type.Object({
  placemarks: Type.Array(PlacemarkSummary),
  bbox: Type.Object({ min_lon: Type.Number(), min_lat: Type.Number(), max_lon: Type.Number(), max_lat: Type.Number() }),
  count: Type.Integer()
})

export const TimelineResponse = Type.Object({ events: Type.Array(TimelineEvent), count: Type.Integer() })
export const FoldersResponse = Type.Object({ folders: Type.Array(Type.String()), count: Type.Integer() })
export const StatsResponse = Type.Object({
  total_placemarks: Type.Integer(),
  total_styles: Type.Integer(),
  geometry_types: Type.Record(Type.String(), Type.Integer()),
  top_folders: Type.Record(Type.String(), Type.Integer())
})

export type PlacemarkSummaryT = Static<typeof PlacemarkSummary>
export type PlacemarkDetailT = Static<typeof PlacemarkDetail>
export type TimelineEventT = Static<typeof TimelineEvent>
export type StatsT = Static<typeof StatsResponse>
