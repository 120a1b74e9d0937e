import type { SummaryBytes } from '../geo/box-index.ts'
import type { ResolvedStyle, StyleGeometry, StyleResolver } from '../kml/resolved-style.ts'

// The box query's answer, built around summaries already serialized (by the in-memory index or from
// the database's rows): the JSON body, or a GeoJSON FeatureCollection spliced from the same bytes.

/** The body of a box answer around already serialized summaries (in the BboxResponse schema's key order). */
export function bboxBody (summaries: SummaryBytes, bbox: { min_lon: number; min_lat: number; max_lon: number; max_lat: number }): Buffer {
  const head = '{"placemarks":['
  const { min_lon, min_lat, max_lon, max_lat } = bbox
  const tail = `],"bbox":${JSON.stringify({ min_lon, min_lat, max_lon, max_lat })},"count":${summaries.count}}`
  const body = Buffer.allocUnsafe(head.length + summaries.byteLength + tail.length)
  body.write(head, 0, 'latin1')
  summaries.copyTo(body, head.length)
  body.write(tail, head.length + summaries.byteLength, 'latin1')
  return body
}

// Markers in serialized summaries (toSummary's key order: `geometry` right before `coordinates_raw`,
// no nested objects). A quote inside a JSON string is always escaped, so a marker that begins or holds
// an unescaped quote after another character than a backslash can only be the structure itself.
const GEOMETRY_KEY = ',"geometry":"'
const GEOMETRY_END = '","coordinates_raw":'
const NEXT_SUMMARY = '},{"id":'

// More markers of a serialized summary's keys, for cutting it into the pieces the box index shares and
// for reading the fields a tile shows, in toSummary's order.
const NAME_KEY = ',"name":'
const DESCRIPTION_KEY = ',"description":'
const STYLE_KEY = ',"style_id":'
const FOLDER_KEY = ',"folder_path":'
const TYPE_KEY = ',"geometry_type":"'
const COORDINATES_KEY = '\\"coordinates\\":'
const MEDIA_KEY = ',"media_links":'
const TIME_BEGIN_KEY = ',"time_begin":'
const TIME_END_KEY = ',"time_end":'

/**
 * A serialized summary cut into the pieces the in-memory box index keeps (see IndexedPlacemark):
 * literal at even positions, at odd positions what many placemarks share. Id, name and description;
 * style, folder path, geometry type and the geometry's text up to its coordinates; the coordinates;
 * the text up to coordinates_raw's value; that value (very often the coordinates in KML form);
 * media links, the import time and the KML times. Cut by slicing: the pieces always join into the
 * summary, and one that does not look as expected is kept whole.
 */
export function summaryPieces (json: string): string[] {
  const style = json.indexOf(STYLE_KEY)
  const geometry = json.indexOf(GEOMETRY_KEY, style)
  const end = json.indexOf(GEOMETRY_END, geometry)
  const media = json.indexOf(MEDIA_KEY, end)
  if (style === -1 || geometry === -1 || end === -1 || media === -1) return [json]
  const coordinates = json.indexOf(COORDINATES_KEY, geometry)
  const raw = end + GEOMETRY_END.length
  // The raw value: a string (between its quotes, ending right before the media links' key) or null.
  const rawText = json[raw] === '"' && json[media - 1] === '"'
  const pieces = [json.slice(0, style)]
  if (coordinates !== -1 && coordinates < end && json[end - 1] === '}') {
    const from = coordinates + COORDINATES_KEY.length
    pieces.push(json.slice(style, from), json.slice(from, end - 1))
    if (rawText) pieces.push(json.slice(end - 1, raw + 1), json.slice(raw + 1, media - 1), json.slice(media - 1))
    else pieces.push(json.slice(end - 1))
  } else {
    pieces.push(json.slice(style, geometry + GEOMETRY_KEY.length), json.slice(geometry + GEOMETRY_KEY.length, media), json.slice(media))
  }
  return pieces
}

/** What a tile reads of a serialized summary, by its keys; the geometry as the span of its JSON string's contents. */
export interface SummaryTileFields {
  name: string
  style_id: string | null
  /** The innermost folder's name, null at the root. */
  folder: string | null
  geometry_type: string
  geometryStart: number
  geometryEnd: number
  time_begin: string | null
  time_end: string | null
}

// The JSON string (or null) of text[from, to): read as it is when it holds no escape.
function stringValue (text: string, from: number, to: number): string | null {
  if (text.charCodeAt(from) !== 0x22) return null
  const inner = text.slice(from + 1, to - 1)
  return inner.indexOf('\\') === -1 ? inner : JSON.parse(text.slice(from, to)) as string
}

// The last string of a JSON array of strings (text[from, to)), or null when it is empty: after its
// last `","` or its `["` (a quote inside a string is always escaped, so neither can be in one).
function lastString (text: string, from: number, to: number): string | null {
  if (to - from <= 2) return null
  const comma = text.lastIndexOf('","', to - 1)
  const start = comma > from ? comma + 2 : from + 1
  return stringValue(text, start, to - 1)
}

/**
 * The fields of a serialized summary a tile shows, read by its keys instead of parsing all of it (its
 * description, raw coordinates and media links are no use to a tile, and its geometry is read from the
 * box index's numbers); null when the text is not laid out as toSummary writes it.
 */
export function summaryTileFields (summary: string): SummaryTileFields | null {
  const name = summary.indexOf(NAME_KEY)
  const description = summary.indexOf(DESCRIPTION_KEY, name)
  const style = summary.indexOf(STYLE_KEY, description)
  const folder = summary.indexOf(FOLDER_KEY, style)
  const type = summary.indexOf(TYPE_KEY, folder)
  const geometry = summary.indexOf(GEOMETRY_KEY, type)
  const geometryEnd = summary.indexOf(GEOMETRY_END, geometry)
  if (name === -1 || description === -1 || style === -1 || folder === -1 || type === -1 || geometry === -1 || geometryEnd === -1) return null
  const typeStart = type + TYPE_KEY.length
  const begin = summary.indexOf(TIME_BEGIN_KEY, geometryEnd)
  const end = begin === -1 ? -1 : summary.indexOf(TIME_END_KEY, begin)
  const nameValue = stringValue(summary, name + NAME_KEY.length, description)
  if (nameValue === null) return null
  return {
    name: nameValue,
    style_id: stringValue(summary, style + STYLE_KEY.length, folder),
    folder: lastString(summary, folder + FOLDER_KEY.length, type),
    geometry_type: summary.slice(typeStart, summary.indexOf('"', typeStart)),
    geometryStart: geometry + GEOMETRY_KEY.length,
    geometryEnd,
    time_begin: begin === -1 ? null : stringValue(summary, begin + TIME_BEGIN_KEY.length, end === -1 ? summary.length - 1 : end),
    time_end: end === -1 ? null : stringValue(summary, end + TIME_END_KEY.length, summary.length - 1)
  }
}

/**
 * Serialized summaries (joined by commas) as GeoJSON features (joined by commas), by splicing: each
 * geometry's JSON string is read back into the stored GeoJSON text, the rest of the summary becomes the
 * properties as it is. Cheaper than reading whole summaries back into objects and writing them again,
 * which matters at the box query's 10,000.
 */
export function summariesToFeatures (text: string, styles?: StyleResolver): string {
  const out: string[] = []
  let at = 0
  while (at < text.length) {
    const idEnd = text.indexOf(',', at)
    const key = text.indexOf(GEOMETRY_KEY, idEnd)
    const end = text.indexOf(GEOMETRY_END, key + GEOMETRY_KEY.length)
    if (!text.startsWith('{"id":', at) || key === -1 || end === -1) throw new Error('not a serialized placemark summary')
    const next = text.indexOf(NEXT_SUMMARY, end)
    const stop = next === -1 ? text.length : next + 1
    // The JSON string literal read back: the stored GeoJSON text, character for character.
    const geometry = JSON.parse(text.slice(key + GEOMETRY_KEY.length - 1, end + 1)) as string
    const properties = `${text.slice(at, key)}${text.slice(end + 1, stop)}`
    // With styles, the resolved style closes the properties (lib/geo/geojson.ts styledPlacemarkFeature).
    const styled = styles === undefined ? properties : `${properties.slice(0, -1)},"style":${JSON.stringify(styleOf(properties, styles))}}`
    out.push(`{"type":"Feature","id":${text.slice(at + 6, idEnd)},"geometry":${geometry},"properties":${styled}}`)
    at = stop + 1
  }
  return out.join(',')
}

// A serialized summary's resolved style, from its style id and geometry type (read from their keys, the
// summary's structure: a quote inside a JSON string is always escaped).
function styleOf (summary: string, styles: StyleResolver): ResolvedStyle {
  const style = summary.indexOf(STYLE_KEY)
  const folder = summary.indexOf(FOLDER_KEY, style)
  const type = summary.indexOf(TYPE_KEY, folder)
  if (style === -1 || folder === -1 || type === -1) return {}
  const from = type + TYPE_KEY.length
  return styles.resolve(stringValue(summary, style + STYLE_KEY.length, folder), summary.slice(from, summary.indexOf('"', from)) as StyleGeometry)
}

/**
 * The GeoJSON twin of `bboxBody`: the same summaries as a FeatureCollection, the box echoed as
 * `query_bbox` (GeoJSON reserves `bbox` for an array of the features' extent).
 */
export function bboxGeoJson (summaries: SummaryBytes, bbox: { min_lon: number; min_lat: number; max_lon: number; max_lat: number }, styles?: StyleResolver): Buffer {
  const list = Buffer.allocUnsafe(summaries.byteLength)
  summaries.copyTo(list, 0)
  const { min_lon, min_lat, max_lon, max_lat } = bbox
  const tail = `],"query_bbox":${JSON.stringify({ min_lon, min_lat, max_lon, max_lat })},"count":${summaries.count}}`
  return Buffer.from(`{"type":"FeatureCollection","features":[${summariesToFeatures(list.toString(), styles)}${tail}`)
}
