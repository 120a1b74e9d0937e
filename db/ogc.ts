import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { searchCondition, searchWords, SUMMARY, TIMES, toSummary, type SummaryRow } from './placemarks.ts'
import type { PlacemarkSummaryT } from '../schemas/placemarks.ts'

type Db = Kysely<Database>

/** The OGC items' filters: all of them must hold. */
export interface ItemFilter {
  // Only these placemarks (the ids the box query found), when given.
  ids?: number[]
  folder?: string
  geometryType?: string
  // Text search: each word in the name or the description.
  q?: string
  // Placemarks whose time intersects [from, to] (ISO instants; either end open, not both).
  datetime?: { from: string | null; to: string | null }
}

/**
 * The conditions on `placemarks p` that every filter shared by the OGC items, the GeoJSON list and the
 * tiles means (all must hold): `folder` a level of the path, `datetime` a time intersecting [from, to],
 * `q` each word in the name or the description.
 */
export function placemarkFilterConditions (f: Pick<ItemFilter, 'folder' | 'datetime' | 'q'>) {
  const parts = []
  if (f.folder !== undefined) parts.push(sql`p.folder_path @> ARRAY[${f.folder}]::text[]`)
  if (f.datetime !== undefined) {
    parts.push(sql`(p.time_begin IS NOT NULL OR p.time_end IS NOT NULL)`)
    if (f.datetime.to !== null) parts.push(sql`(p.time_begin IS NULL OR p.time_begin <= ${f.datetime.to}::timestamptz)`)
    if (f.datetime.from !== null) parts.push(sql`(p.time_end IS NULL OR p.time_end >= ${f.datetime.from}::timestamptz)`)
  }
  const words = searchWords(f.q)
  if (words.length) parts.push(searchCondition(words))
  return parts
}

function conditions (f: ItemFilter) {
  const parts = placemarkFilterConditions(f)
  if (f.ids !== undefined) parts.unshift(sql`p.id = ANY(${f.ids}::int[])`)
  if (f.geometryType !== undefined) parts.push(sql`p.geometry_type = ${f.geometryType}`)
  return parts.length === 0 ? sql`` : sql`WHERE ${sql.join(parts, sql` AND `)}`
}

/** One page of the placemarks matching the filters, in id order, with how many match in all. */
export async function filteredPlacemarks (db: Db, f: ItemFilter, limit: number, offset: number): Promise<{ placemarks: PlacemarkSummaryT[]; matched: number }> {
  if (f.ids !== undefined && f.ids.length === 0) return { placemarks: [], matched: 0 }
  const where = conditions(f)
  const [page, count] = await Promise.all([
    sql<SummaryRow>`SELECT ${SUMMARY} FROM placemarks p ${where} ORDER BY p.id LIMIT ${limit} OFFSET ${offset}`.execute(db),
    sql<{ n: number }>`SELECT count(*)::int AS n FROM placemarks p ${where}`.execute(db)
  ])
  return { placemarks: page.rows.map(toSummary), matched: count.rows[0]?.n ?? 0 }
}

/** How many placemarks match the filters (the GeoJSON list's `numberMatched`). */
export async function countMatching (db: Db, f: ItemFilter): Promise<number> {
  if (f.ids !== undefined && f.ids.length === 0) return 0
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM placemarks p ${conditions(f)}`.execute(db)
  return rows[0]?.n ?? 0
}

/** One placemark's KML time; undefined when no placemark has this id. */
export async function placemarkTimeOf (db: Db, id: number): Promise<{ time_begin: string | null; time_end: string | null } | undefined> {
  const { rows: [row] } = await sql<{ time_begin: string | null; time_end: string | null }>`SELECT ${TIMES} FROM placemarks p WHERE p.id = ${id}`.execute(db)
  return row
}

/**
 * How many placemarks matching the filters have a KML time intersecting each of `bins` periods: period
 * i is [start + i·step, start + (i + 1)·step − 1 ms] (milliseconds since the epoch), each an OGC
 * `datetime` interval of its first and last millisecond, so a count is what the items' numberMatched
 * gives for that interval. One pass over the timed placemarks: each is counted in the run of periods its
 * time spans (computed in whole microseconds, as PostgreSQL keeps times), not tested against each period.
 */
export async function timeHistogram (db: Db, f: Pick<ItemFilter, 'folder' | 'q'>, start: number, step: number, bins: number): Promise<number[]> {
  const parts = placemarkFilterConditions({ folder: f.folder, q: f.q })
  const filters = parts.length === 0 ? sql`` : sql`AND ${sql.join(parts, sql` AND `)}`
  // Microseconds, exact as numeric.
  const s = sql`${String(start * 1000)}::numeric`
  const w = sql`${String(step * 1000)}::numeric`
  const micros = (column: ReturnType<typeof sql>) => sql`(extract(epoch FROM ${column}) * 1000000)`
  const { rows } = await sql<{ bin: number; n: number }>`
    WITH spans AS (
      SELECT
        CASE WHEN p.time_begin IS NULL THEN 0
          ELSE least(${bins}, greatest(0, ceil((${micros(sql`p.time_begin`)} - ${s} + 1000) / ${w}) - 1)) END AS lo,
        CASE WHEN p.time_end IS NULL THEN ${bins - 1}
          ELSE greatest(-1, least(${bins - 1}, floor((${micros(sql`p.time_end`)} - ${s}) / ${w}))) END AS hi
      FROM placemarks p
      WHERE (p.time_begin IS NOT NULL OR p.time_end IS NOT NULL) ${filters}
    )
    SELECT b AS bin, count(*)::int AS n
    FROM spans, generate_series(spans.lo::int, spans.hi::int) AS b
    GROUP BY b`.execute(db)
  const counts = new Array<number>(bins).fill(0)
  for (const r of rows) counts[Number(r.bin)] = r.n
  return counts
}
