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

// More markers of a serialized summary's keys, for cutting it into the pieces the box index shares.
const STYLE_KEY = ',"style_id":'
const COORDINATES_KEY = '\\"coordinates\\":'
const MEDIA_KEY = ',"media_links":'

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
  const folder = summary.indexOf(',"folder_path":', style)
  const type = summary.indexOf(',"geometry_type":"', folder)
  if (style === -1 || folder === -1 || type === -1) return {}
  const id = summary.charCodeAt(style + STYLE_KEY.length) === 0x22 ? JSON.parse(summary.slice(style + STYLE_KEY.length, folder)) as string : null
  const from = type + ',"geometry_type":"'.length
  return styles.resolve(id, summary.slice(from, summary.indexOf('"', from)) as StyleGeometry)
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
