import type { Static } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { Nullable, ref } from './common.ts'

export const GeometryType = Type.Union([Type.Literal('Point'), Type.Literal('LineString'), Type.Literal('Polygon')], {
  description: 'The KML geometry of the placemark',
  examples: ['Point']
})

const urls = (description: string) => Type.Array(Type.String(), { description, examples: [['https://example.org/media/blvd-traffic.mp4']] })
const folderPath = Type.Array(Type.String(), { description: 'Enclosing folder names, outermost first; [] at document level', examples: [['Las Vegas Strip']] })

// Shared shapes ($id): registered once (schemas/components.ts), referred to with ref().
export const PlacemarkSummary = Type.Object({
  id: Type.Integer({ description: 'Identifier; ids follow document order of the imported file', examples: [4] }),
  name: Type.String({ description: 'The placemark\'s name as written in the KML', examples: ['10/1/2017  10:09:48 PM - Traffic stopped on Las Vegas Boulevard'] }),
  description: Nullable(Type.String({ description: 'The KML description (may hold HTML); null when absent', examples: ['<a href="https://example.org/media/blvd-traffic.mp4">Dash camera clip</a>'] })),
  style_id: Nullable(Type.String({ description: 'The placemark\'s styleUrl without the leading #', examples: ['icon-camera'] })),
  folder_path: folderPath,
  geometry_type: GeometryType,
  geometry: Type.String({ description: 'GeoJSON geometry serialized as a JSON string, [lon, lat] positions', examples: ['{"type":"Point","coordinates":[-115.1736,36.0971]}'] }),
  coordinates_raw: Nullable(Type.String({ description: 'The KML <coordinates> text (for polygons the outer ring), whitespace collapsed', examples: ['-115.17360,36.09710,0'] })),
  media_links: urls('URLs from the gx_media_links data field'),
  created_at: Type.String({ format: 'date-time', description: 'When the placemark was imported (UTC)', examples: ['2026-01-15T09:30:00.000Z'] }),
  time_begin: Nullable(Type.String({ format: 'date-time', description: 'The start of its KML time (TimeStamp or TimeSpan begin, the start of the period a date names), UTC; null without one', examples: [null] })),
  time_end: Nullable(Type.String({ format: 'date-time', description: 'The end of its KML time (the last millisecond of the period a date names), UTC; null without one or for an open span', examples: [null] }))
}, { $id: 'Placemark', title: 'Placemark', description: 'A placemark of the imported dataset (without its extended data)' })

export const KeyValue = Type.Object({
  key: Type.String({ description: 'The Data name, or the SimpleData name', examples: ['category'] }),
  value: Type.String({ description: 'Its value (may be empty)', examples: ['landmark'] })
}, { title: 'ExtendedDataEntry' })

export const PlacemarkDetail = Type.Composite([
  PlacemarkSummary,
  Type.Object({ extended_data: Type.Array(KeyValue, { description: 'Every other ExtendedData Data and SchemaData/SimpleData entry, in document order' }) })
], { $id: 'PlacemarkWithExtendedData', title: 'PlacemarkWithExtendedData', description: 'A placemark with its extended data' })

export const TimelineEvent = Type.Object({
  timestamp: Nullable(Type.String({ format: 'date-time', description: 'UTC instant of the time in the name, converted from the import timezone; null when the name has a date but no (valid) time', examples: ['2017-10-02T05:09:48Z'] })),
  date: Type.String({ format: 'date', description: 'Local calendar date written in the name', examples: ['2017-10-01'] }),
  name: Type.String({ description: 'The placemark\'s name', examples: ['10/1/2017  10:09:48 PM - Traffic stopped on Las Vegas Boulevard'] }),
  description: Nullable(Type.String({ description: 'The placemark\'s description; null when absent', examples: ['<a href="https://example.org/media/blvd-traffic.mp4">Dash camera clip</a>'] })),
  location: Nullable(Type.Object({
    lat: Type.Number({ description: 'Latitude (WGS 84)', examples: [36.0971] }),
    lon: Type.Number({ description: 'Longitude (WGS 84)', examples: [-115.1736] })
  }, { description: 'The point, or the centre of a line\'s or polygon\'s bounding box' })),
  media_links: urls('URLs from the gx_media_links data field'),
  placemark_id: Type.Integer({ description: 'The placemark this event is', examples: [4] }),
  folder_path: folderPath,
  time_inferred: Type.Optional(Type.Literal(true, {
    description: 'Present (true) when the name\'s time had no AM/PM and an hour of 1..12, and took AM or PM from the nearest placemark of the same date that has one (the earlier on a tie)'
  }))
}, { $id: 'TimelineEvent', title: 'TimelineEvent', description: 'A placemark whose name starts with a date' })

export const ListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1..1000 (default 100)', examples: [10] }),
  offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0, description: 'Number of placemarks to skip, >= 0 (default 0)', examples: [0] }),
  folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only placemarks with a folder of exactly this name at any level of their path', examples: ['Las Vegas Strip'] })),
  q: Type.Optional(Type.String({ maxLength: 500, description: 'Text search: whitespace-separated words (at most 16), each of which must appear in the name or the description, case-insensitively', examples: ['tropicana'] }))
}, { additionalProperties: false })

export const PlacemarkList = Type.Object({
  placemarks: Type.Array(ref(PlacemarkSummary), { description: 'The page, ordered by id' }),
  limit: Type.Integer({ description: 'The page size applied', examples: [10] }),
  offset: Type.Integer({ description: 'The offset applied', examples: [0] })
}, { title: 'PlacemarkPage' })

export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Placemark id, 1..2147483647', examples: [2] })
})

const longitude = (description: string, example: number) => Type.Number({ minimum: -180, maximum: 180, description, examples: [example] })
const latitude = (description: string, example: number) => Type.Number({ minimum: -90, maximum: 90, description, examples: [example] })

// The examples draw a box around the south of the Las Vegas Strip, where the sample data has placemarks.
export const BboxQuery = Type.Object({
  min_lon: longitude('West edge, degrees in [-180, 180]; greater than max_lon for a box crossing the antimeridian', -115.18),
  min_lat: latitude('South edge, degrees in [-90, 90]; at most max_lat', 36.09),
  max_lon: longitude('East edge, degrees in [-180, 180]', -115.16),
  max_lat: latitude('North edge, degrees in [-90, 90]; at least min_lat', 36.11),
  limit: Type.Integer({ minimum: 1, maximum: 10000, default: 1000, description: 'Result cap, 1..10000 (default 1000)', examples: [100] })
}, { additionalProperties: false })

export const BboxResponse = Type.Object({
  placemarks: Type.Array(ref(PlacemarkSummary), { description: 'Placemarks intersecting the box, ordered by id, at most `limit`' }),
  bbox: Type.Object({
    min_lon: Type.Number({ examples: [-115.18] }),
    min_lat: Type.Number({ examples: [36.09] }),
    max_lon: Type.Number({ examples: [-115.16] }),
    max_lat: Type.Number({ examples: [36.11] })
  }, { description: 'The box asked for, as received' }),
  count: Type.Integer({ description: 'Number of entries in `placemarks`', examples: [3] })
}, { title: 'BboxResult' })

export const TimelineQuery = Type.Object({
  from: Type.Optional(Type.String({ maxLength: 64, description: 'Only events at or after this instant (ISO 8601; no zone: UTC; a date: its midnight UTC). A date-only event\'s instant is the start of its local day, as in the sort', examples: ['2017-10-01T00:00:00Z'] })),
  to: Type.Optional(Type.String({ maxLength: 64, description: 'Only events before this instant (exclusive), in the same forms as `from`', examples: ['2017-10-03'] }))
}, { additionalProperties: false })

export const TimelineEvents = Type.Array(ref(TimelineEvent), { title: 'TimelineEvents', description: 'Every event, sorted by instant, then placemark id' })
export const TimelineResponse = Type.Object({
  events: Type.Array(ref(TimelineEvent), { description: 'Every event, sorted by instant, then placemark id' }),
  count: Type.Integer({ description: 'Number of events', examples: [12] })
}, { title: 'Timeline' })
export const FoldersResponse = Type.Object({
  folders: Type.Array(Type.String(), { description: 'Distinct folder names, sorted by code point', examples: [['Downtown', 'Las Vegas Strip']] }),
  count: Type.Integer({ description: 'Number of folder names', examples: [2] })
}, { title: 'FolderList' })
export const StatsResponse = Type.Object({
  total_placemarks: Type.Integer({ description: 'Placemarks in the dataset', examples: [57] }),
  total_styles: Type.Integer({ description: 'Styles defined in the dataset', examples: [10] }),
  geometry_types: Type.Record(Type.String(), Type.Integer(), { description: 'Placemarks per geometry type', examples: [{ LineString: 8, Point: 43, Polygon: 6 }] }),
  top_folders: Type.Record(Type.String(), Type.Integer(), { description: 'The 10 folder names with the most placemarks, with their counts', examples: [{ 'Las Vegas Strip': 21, Downtown: 13 }] }),
  timezone: Nullable(Type.String({ description: 'The IANA time zone the dataset was imported with (`npm run import -- --timezone`): the zone of the local times in its names and of dates without a zone, in which the map shows its times; null before the first import', examples: ['America/Los_Angeles'] }))
}, { title: 'DatasetStats' })

export type PlacemarkSummaryT = Static<typeof PlacemarkSummary>
export type PlacemarkDetailT = Static<typeof PlacemarkDetail>
export type TimelineEventT = Static<typeof TimelineEvent>
export type StatsT = Static<typeof StatsResponse>
