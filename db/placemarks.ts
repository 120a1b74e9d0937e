import { sql, type Kysely } from 'kysely'
import type { Database } from './types.ts'
import { intersectsBox, splitBox, type Box, type Geometry } from '../lib/geo/box.ts'
import { BoxIndexBuilder, joinSummaries, type BoxIndex, type SummaryBytes } from '../lib/geo/box-index.ts'
import { featureText } from '../lib/geo/geojson.ts'
import type { PlacemarkDetailT, PlacemarkSummaryT, StatsT, TimelineEventT } from '../schemas/placemarks.ts'

type Db = Kysely<Database>

/**
 * A placemark summary's columns, from `placemarks p`. Arrays come as JSON text and the time as whole
 * epoch milliseconds (truncated, as the driver's Date would be): decoding those is cheaper than the
 * driver's text-array and timestamp parsers, which matters where every candidate row of a box query
 * is decoded (about a fifth less server CPU per bbox request over 1M placemarks).
 */
const SUMMARY = sql`p.id, p.name, p.description, p.style_id, array_to_json(p.folder_path)::text AS folder_path,
  p.geometry_type, p.geometry, p.coordinates_raw, array_to_json(p.media_links)::text AS media_links,
  (extract(epoch FROM date_trunc('milliseconds', p.created_at)) * 1000)::float8 AS created_ms`

interface SummaryRow {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string
  geometry_type: PlacemarkSummaryT['geometry_type']
  geometry: string
  coordinates_raw: string | null
  media_links: string
  created_ms: number
}

function toSummary (row: SummaryRow): PlacemarkSummaryT {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    style_id: row.style_id,
    folder_path: JSON.parse(row.folder_path) as string[],
    geometry_type: row.geometry_type,
    geometry: row.geometry,
    coordinates_raw: row.coordinates_raw,
    media_links: JSON.parse(row.media_links) as string[],
    created_at: new Date(row.created_ms).toISOString()
  }
}

// One placemark's summary as JSON text, the form the box answers (from memory or the database) are made of.
const summaryJson = (row: SummaryRow): string => JSON.stringify(toSummary(row))

export async function listPlacemarks (db: Db, q: { limit: number; offset: number; folder?: string }): Promise<PlacemarkSummaryT[]> {
  // Array containment is GIN-indexed; it means "the folder name appears at some level of the path".
  const folder = q.folder === undefined ? sql`` : sql`WHERE p.folder_path @> ARRAY[${q.folder}]::text[]`
  const { rows } = await sql<SummaryRow>`
    SELECT ${SUMMARY} FROM placemarks p ${folder} ORDER BY p.id LIMIT ${q.limit} OFFSET ${q.offset}`.execute(db)
  return rows.map(toSummary)
}

export async function getPlacemark (db: Db, id: number): Promise<PlacemarkDetailT | undefined> {
  const { rows: [row] } = await sql<SummaryRow & { extended_data: PlacemarkDetailT['extended_data'] }>`
    SELECT ${SUMMARY}, p.extended_data FROM placemarks p WHERE p.id = ${id}`.execute(db)
  if (!row) return undefined
  return { ...toSummary(row), extended_data: row.extended_data }
}

function boxLiteral (b: Box): string {
  return `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`
}

// The GiST index finds candidates by bounding box (its comparisons are slightly fuzzy); the exact
// ST_Intersects-like test then runs on each candidate's geometry. Answers serialized summaries, the
// form the in-memory box index keeps too, so both give the same bytes.
export async function placemarksInBox (db: Db, box: Box, limit: number): Promise<SummaryBytes> {
  const parts = splitBox(box).map(boxLiteral)
  const overlap = sql.join(parts.map((p) => sql`bbox && ${p}::box`), sql` OR `)
  const out: string[] = []
  // Most candidates pass the exact test (points always do), so a page a little over the limit usually suffices.
  const page = Math.min(limit + 32, 20000)
  let after = 0
  for (;;) {
    // Candidate ids come from an index-only scan of the GiST index (it includes id); only the page's
    // rows are then read from the table.
    const { rows } = await sql<SummaryRow>`
      WITH ids AS MATERIALIZED (
        SELECT id FROM placemarks WHERE (${overlap}) AND id > ${after} ORDER BY id LIMIT ${page}
      )
      SELECT ${SUMMARY}
      FROM placemarks p JOIN ids ON ids.id = p.id
      ORDER BY p.id`.execute(db)
    for (const row of rows) {
      if (intersectsBox(JSON.parse(row.geometry) as Geometry, box)) {
        out.push(summaryJson(row))
        if (out.length >= limit) return joinSummaries(out)
      }
    }
    if (rows.length < page) return joinSummaries(out)
    after = rows[rows.length - 1].id
  }
}

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

/**
 * Serialized summaries (joined by commas) as GeoJSON features (joined by commas), by splicing: each
 * geometry's JSON string is read back into the stored GeoJSON text, the rest of the summary becomes the
 * properties as it is. Cheaper than reading whole summaries back into objects and writing them again,
 * which matters at the box query's 10,000.
 */
export function summariesToFeatures (text: string): string {
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
    out.push(`{"type":"Feature","id":${text.slice(at + 6, idEnd)},"geometry":${geometry},"properties":${text.slice(at, key)}${text.slice(end + 1, stop)}}`)
    at = stop + 1
  }
  return out.join(',')
}

/**
 * The GeoJSON twin of `bboxBody`: the same summaries as a FeatureCollection, the box echoed as
 * `query_bbox` (GeoJSON reserves `bbox` for an array of the features' extent).
 */
export function bboxGeoJson (summaries: SummaryBytes, bbox: { min_lon: number; min_lat: number; max_lon: number; max_lat: number }): Buffer {
  const list = Buffer.allocUnsafe(summaries.byteLength)
  summaries.copyTo(list, 0)
  const { min_lon, min_lat, max_lon, max_lat } = bbox
  const tail = `],"query_bbox":${JSON.stringify({ min_lon, min_lat, max_lon, max_lat })},"count":${summaries.count}}`
  return Buffer.from(`{"type":"FeatureCollection","features":[${summariesToFeatures(list.toString())}${tail}`)
}

/**
 * Reads every placemark's bounds and serialized summary into a box index, in spatial order (cells of
 * 0.05°, row by row, each in id order), so that the entries one box query reads sit together in memory:
 * the order first (ids only), then the rows in pages of that order. Gives up (null) once the summaries
 * pass `maxBytes`, or when `stop()` says so between pages.
 * Every query is short, so none holds up an import's table swap for long; the caller compares the
 * dataset version before and after, since an import committed in between would mix two datasets.
 */
export async function loadBoxIndex (db: Db, opts: { maxBytes: number; pageSize?: number; stop?: () => boolean }): Promise<BoxIndex | null> {
  const { rows: order } = await sql<{ id: number }>`
    SELECT id FROM placemarks p
    ORDER BY floor(((p.bbox[0])[1] + (p.bbox[1])[1]) * 10), floor(((p.bbox[0])[0] + (p.bbox[1])[0]) * 10), p.id`.execute(db)
  const builder = new BoxIndexBuilder()
  // Small pages keep each synchronous stretch of decoding short for the requests served meanwhile.
  const pageSize = opts.pageSize ?? 2000
  for (let start = 0; start < order.length; start += pageSize) {
    if (opts.stop?.()) return null
    const ids = order.slice(start, start + pageSize).map((row) => row.id)
    const { rows } = await sql<SummaryRow & { min_lon: number; min_lat: number; max_lon: number; max_lat: number }>`
      SELECT ${SUMMARY}, (p.bbox[1])[0] AS min_lon, (p.bbox[1])[1] AS min_lat, (p.bbox[0])[0] AS max_lon, (p.bbox[0])[1] AS max_lat
      FROM unnest(${ids}::int[]) WITH ORDINALITY AS page(id, n) JOIN placemarks p ON p.id = page.id
      ORDER BY page.n`.execute(db)
    for (const row of rows) {
      builder.add({ id: row.id, minLon: row.min_lon, minLat: row.min_lat, maxLon: row.max_lon, maxLat: row.max_lat, geometry: row.geometry, json: summaryJson(row) })
    }
    if (builder.bytes > opts.maxBytes) return null
  }
  return builder.finish()
}

interface TimelineRow {
  id: number;
  name: string;
  description: string | null;
  media_links: string[];
  folder_path: string[]
  event_date: string;
  event_timestamp: Date | null;
  lon: number;
  lat: number;
  geometry?: string
}

async function timelineRows (db: Db, withGeometry: boolean): Promise<TimelineRow[]> {
  const geometry = withGeometry ? sql`, geometry` : sql``
  const { rows } = await sql<TimelineRow>`
    SELECT id, name, description, media_links, folder_path, event_date, event_timestamp,
           (center(bbox))[0] AS lon, (center(bbox))[1] AS lat${geometry}
    FROM placemarks
    WHERE event_sort IS NOT NULL
    ORDER BY event_sort, id`.execute(db)
  return rows
}

const toEvent = (r: TimelineRow): TimelineEventT => ({
  timestamp: r.event_timestamp ? r.event_timestamp.toISOString().replace('.000Z', 'Z') : null,
  date: r.event_date,
  name: r.name,
  description: r.description,
  location: { lat: r.lat, lon: r.lon },
  media_links: r.media_links,
  placemark_id: r.id,
  folder_path: r.folder_path
})

export async function timelineEvents (db: Db): Promise<TimelineEventT[]> {
  return (await timelineRows(db, false)).map(toEvent)
}

/** The timeline events as GeoJSON features: each event's fields as properties, its placemark's geometry. */
export async function timelineFeatures (db: Db): Promise<string[]> {
  return (await timelineRows(db, true)).map((r) => featureText(r.id, r.geometry!, toEvent(r)))
}

export async function folderNames (db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM folders GROUP BY name ORDER BY name COLLATE "C"`.execute(db)
  return rows.map((r) => r.name)
}

export async function datasetStats (db: Db): Promise<StatsT> {
  const [totals, types, folders] = await Promise.all([
    sql<{ placemarks: number; styles: number }>`
      SELECT (SELECT count(*) FROM placemarks)::int AS placemarks, (SELECT count(*) FROM styles)::int AS styles`.execute(db),
    sql<{ geometry_type: string; n: number }>`
      SELECT geometry_type, count(*)::int AS n FROM placemarks GROUP BY geometry_type ORDER BY geometry_type`.execute(db),
    sql<{ name: string; n: number }>`
      SELECT f.name, count(DISTINCT p.id)::int AS n
      FROM placemarks p CROSS JOIN LATERAL unnest(p.folder_path) AS f(name)
      GROUP BY f.name ORDER BY n DESC, f.name COLLATE "C" LIMIT 10`.execute(db)
  ])
  return {
    total_placemarks: totals.rows[0].placemarks,
    total_styles: totals.rows[0].styles,
    geometry_types: Object.fromEntries(types.rows.map((r) => [r.geometry_type, r.n])),
    top_folders: Object.fromEntries(folders.rows.map((r) => [r.name, r.n]))
  }
}
