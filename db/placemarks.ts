import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { datasetFacts } from './dataset-facts.ts'
import { intersectsBox, splitBox, type Box, type Geometry } from '../lib/geo/box.ts'
import type { PlacemarkDetailT, PlacemarkSummaryT, StatsT, TimelineEventT } from '../schemas/placemarks.ts'

type Db = Kysely<Database>

/** A placemark's KML time from `placemarks p`, as every answer and the stored summary write it: UTC instants to the millisecond, null at an open end. */
export const TIMES = sql`to_char(p.time_begin AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time_begin,
  to_char(p.time_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time_end`

/**
 * A placemark summary's columns, from `placemarks p`. Arrays come as JSON text and the time as whole
 * epoch milliseconds (truncated, as the driver's Date would be): decoding those is cheaper than the
 * driver's text-array and timestamp parsers, which matters where every candidate row of a box query
 * is decoded (about a fifth less server CPU per bbox request over 1M placemarks).
 */
export const SUMMARY = sql`p.id, p.name, p.description, p.style_id, array_to_json(p.folder_path)::text AS folder_path,
  p.geometry_type, p.geometry, p.coordinates_raw, array_to_json(p.media_links)::text AS media_links,
  (extract(epoch FROM date_trunc('milliseconds', p.created_at)) * 1000)::float8 AS created_ms, ${TIMES}`

/** What a tile reads of placemark `p` (lib/geo/tiles.ts TileRow): the fields of its summary it shows, the times as the summary has them. */
export const TILE_ROW_COLUMNS = sql`p.id, p.name, p.style_id, p.folder_path[array_upper(p.folder_path, 1)] AS folder, p.geometry_type, p.geometry, ${TIMES}`

export interface SummaryRow {
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
  time_begin: string | null
  time_end: string | null
}

export function toSummary (row: SummaryRow): PlacemarkSummaryT {
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
    created_at: new Date(row.created_ms).toISOString(),
    // Last, after created_at: the box answers splice summaries by the keys before them.
    time_begin: row.time_begin,
    time_end: row.time_end
  }
}

/** The served dataset's version: 0 when nothing was ever imported. */
export async function datasetVersion (db: Db): Promise<number> {
  const { rows } = await sql<{ version: number | null }>`SELECT max(version)::int AS version FROM dataset`.execute(db)
  return rows[0]?.version ?? 0
}

/** The words of a text search: what whitespace separates, at most `max` of them (an empty query has none). */
export function searchWords (q: string | undefined, max = 16): string[] {
  return q === undefined ? [] : q.split(/\s+/u).filter((w) => w !== '').slice(0, max)
}

/**
 * Each word in the name or the description, case-insensitively (ILIKE, its `%`, `_` and `\` taken
 * literally), on the text the trigram index holds (migration 012): the name and the description joined by
 * a space, which a word (no whitespace in it) matches exactly when it matches one of them.
 */
export function searchCondition (words: string[]) {
  return sql.join(words.map((w) => sql`(p.name || ' ' || coalesce(p.description, '')) ILIKE ${`%${w.replace(/[\\%_]/g, '\\$&')}%`}`), sql` AND `)
}

export async function listPlacemarks (db: Db, q: { limit: number; offset: number; folder?: string; q?: string }): Promise<PlacemarkSummaryT[]> {
  // Array containment is GIN-indexed; it means "the folder name appears at some level of the path".
  const conditions = []
  if (q.folder !== undefined) conditions.push(sql`p.folder_path @> ARRAY[${q.folder}]::text[]`)
  const words = searchWords(q.q)
  if (words.length) conditions.push(searchCondition(words))
  const where = conditions.length ? sql`WHERE ${sql.join(conditions, sql` AND `)}` : sql``
  const { rows } = await sql<SummaryRow>`
    SELECT ${SUMMARY} FROM placemarks p ${where} ORDER BY p.id LIMIT ${q.limit} OFFSET ${q.offset}`.execute(db)
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

/** A box answer's placemarks: their stored summaries joined by commas, and how many there are. */
export interface BoxAnswer { json: string; count: number }

/**
 * Whether no placemark's bounds reach past a side of the box by more than PostgreSQL's 1e-6 of slack in
 * `&&` (migration 018's `placemark_box_holds_all`): four GiST probes, each stopping at its first row.
 */
export async function holdsEveryPlacemark (db: Db, b: Box): Promise<boolean> {
  const { rows: [row] } = await sql<{ holds: boolean }>`
    SELECT placemark_box_holds_all(${b.minLon}::float8, ${b.minLat}::float8, ${b.maxLon}::float8, ${b.maxLat}::float8) AS holds`.execute(db)
  return row?.holds === true
}

/**
 * The placemarks intersecting the box (planar ST_Intersects, boundary inclusive; a box crossing the
 * antimeridian as its two halves), the first `limit` in id order, decided and answered in the database
 * by one function call (`placemark_box_answer` of migrations 018 and 019, whose statements PostgreSQL plans once
 * per connection): the stored summaries joined there, so that the caller only copies bytes.
 */
export async function boxAnswer (db: Db, box: Box, limit: number): Promise<BoxAnswer> {
  try {
    const { rows: [row] } = await sql<{ summaries: string; n: number }>`
      SELECT summaries, n FROM placemark_box_answer(${box.minLon}::float8, ${box.minLat}::float8, ${box.maxLon}::float8, ${box.maxLat}::float8, ${limit}::integer)`.execute(db)
    return { json: row?.summaries ?? '', count: row?.n ?? 0 }
  } catch (err) {
    // PostgreSQL's float8 arithmetic refuses a product or quotient that underflows to zero (only
    // coordinates or boxes within about 1e-160 of each other can give one): such a box is answered by
    // the same test in JavaScript, whose arithmetic rounds to zero.
    if ((err as { code?: string }).code !== '22003') throw err
    return boxAnswerTestedHere(db, box, limit)
  }
}

async function boxAnswerTestedHere (db: Db, box: Box, limit: number): Promise<BoxAnswer> {
  const out: string[] = []
  // Most candidates pass the exact test (points always do), so a page a little over the limit usually suffices.
  const page = Math.min(limit + 32, 20000)
  let after = 0
  for (;;) {
    const overlap = sql.join(splitBox(box).map((b) => sql`bbox && ${boxLiteral(b)}::box`), sql` OR `)
    const { rows } = await sql<{ id: number; summary: string; geometry: string }>`
      SELECT id, summary, geometry FROM placemarks WHERE (${overlap}) AND id > ${after} ORDER BY id LIMIT ${page}`.execute(db)
    for (const row of rows) {
      if (intersectsBox(JSON.parse(row.geometry) as Geometry, box)) {
        out.push(row.summary)
        if (out.length >= limit) return { json: out.join(','), count: out.length }
      }
    }
    if (rows.length < page) return { json: out.join(','), count: out.length }
    after = rows[rows.length - 1]!.id
  }
}

/**
 * Every placemark's id in spatial order (cells of 0.05°, row by row, each in id order): the order the
 * in-memory box index keeps its entries in, so that one box query's reads sit together in memory.
 */
export async function placemarkIdsInSpatialOrder (db: Db): Promise<Uint32Array> {
  // One text of ids, not a row per id: a million row objects would be garbage the size of the index's tree.
  const { rows: [row] } = await sql<{ ids: string | null; n: number }>`
    SELECT string_agg(id::text, ',' ORDER BY floor(((p.bbox[0])[1] + (p.bbox[1])[1]) * 10), floor(((p.bbox[0])[0] + (p.bbox[1])[0]) * 10), p.id) AS ids,
      count(*)::int AS n
    FROM placemarks p`.execute(db)
  const ids = new Uint32Array(row?.n ?? 0)
  const text = row?.ids ?? ''
  for (let k = 0, at = 0, v = 0; k <= text.length; k++) {
    const c = k < text.length ? text.charCodeAt(k) : 44
    if (c === 44) {
      ids[at++] = v
      v = 0
    } else {
      v = v * 10 + c - 48
    }
  }
  return ids
}

/** How many placemarks there are, and their smallest and largest ids (0 and -1 when there are none). */
export async function placemarkIdRange (db: Db): Promise<{ count: number; minId: number; maxId: number }> {
  const { rows: [row] } = await sql<{ count: number; min_id: number | null; max_id: number | null }>`
    SELECT count(*)::int AS count, min(id) AS min_id, max(id) AS max_id FROM placemarks`.execute(db)
  return { count: row?.count ?? 0, minId: row?.min_id ?? 0, maxId: row?.max_id ?? -1 }
}

export interface PlacemarkWithBounds { id: number; geometry: string; json: string; minLon: number; minLat: number; maxLon: number; maxLat: number }

/** These placemarks' stored summaries, geometries and bounding boxes, in the order of the ids given. */
export async function placemarksWithBounds (db: Db, ids: ArrayLike<number>): Promise<PlacemarkWithBounds[]> {
  const { rows } = await sql<{ id: number; geometry: string; summary: string; min_lon: number; min_lat: number; max_lon: number; max_lat: number }>`
    SELECT p.id, p.geometry, p.summary, p.min_lon, p.min_lat, p.max_lon, p.max_lat
    FROM unnest(${Array.from(ids)}::int[]) WITH ORDINALITY AS page(id, n) JOIN placemarks p ON p.id = page.id
    ORDER BY page.n`.execute(db)
  return rows.map((r) => ({ id: r.id, geometry: r.geometry, json: r.summary, minLon: r.min_lon, minLat: r.min_lat, maxLon: r.max_lon, maxLat: r.max_lat }))
}

interface TimelineRow {
  id: number;
  name: string;
  description: string | null;
  media_links: string[];
  folder_path: string[]
  event_date: string;
  event_timestamp: Date | null;
  event_time_inferred: boolean | null;
  lon: number;
  lat: number;
  geometry?: string
}

/** A window of the timeline: events whose instant is in [from, to); either end may be open. */
export interface TimelineWindow { from?: Date; to?: Date }

async function timelineRows (db: Db, withGeometry: boolean, window: TimelineWindow = {}): Promise<TimelineRow[]> {
  const geometry = withGeometry ? sql`, geometry` : sql``
  const from = window.from ? sql` AND event_sort >= ${window.from}` : sql``
  const to = window.to ? sql` AND event_sort < ${window.to}` : sql``
  const { rows } = await sql<TimelineRow>`
    SELECT id, name, description, media_links, folder_path, event_date, event_timestamp, event_time_inferred,
           (center(bbox))[0] AS lon, (center(bbox))[1] AS lat${geometry}
    FROM placemarks
    WHERE event_sort IS NOT NULL${from}${to}
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
  folder_path: r.folder_path,
  // Only on the events whose time took its AM/PM from a neighbour.
  ...(r.event_time_inferred ? { time_inferred: true as const } : {})
})

export async function timelineEvents (db: Db, window: TimelineWindow = {}): Promise<TimelineEventT[]> {
  return (await timelineRows(db, false, window)).map(toEvent)
}

/** The timeline events with their placemarks' geometries (for the GeoJSON answers). */
export async function timelineEventsWithGeometry (db: Db, window: TimelineWindow = {}): Promise<{ event: TimelineEventT; geometry: string }[]> {
  return (await timelineRows(db, true, window)).map((r) => ({ event: toEvent(r), geometry: r.geometry! }))
}

export async function folderNames (db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM folders GROUP BY name ORDER BY name COLLATE "C"`.execute(db)
  return rows.map((r) => r.name)
}

/** The dataset's statistics: its facts as the import stored them (db/dataset-facts.ts), and its styles. */
export async function datasetStats (db: Db): Promise<StatsT> {
  const [dataset, styles] = await Promise.all([
    datasetFacts(db),
    sql<{ n: number }>`SELECT count(*)::int AS n FROM styles`.execute(db)
  ])
  return {
    total_placemarks: dataset?.placemarks ?? 0,
    total_styles: styles.rows[0].n,
    geometry_types: Object.fromEntries(dataset?.facts.geometry_types ?? []),
    top_folders: Object.fromEntries(dataset?.facts.top_folders ?? []),
    timezone: dataset?.timezone ?? null
  }
}
