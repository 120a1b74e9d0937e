import { sql, type Kysely } from 'kysely'
import type { Database } from './types.ts'
import { searchCondition, searchWords, SUMMARY, toSummary, type SummaryRow } from './placemarks.ts'
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
}

function conditions (f: ItemFilter) {
  const parts = []
  if (f.ids !== undefined) parts.push(sql`p.id = ANY(${f.ids}::int[])`)
  if (f.folder !== undefined) parts.push(sql`p.folder_path @> ARRAY[${f.folder}]::text[]`)
  if (f.geometryType !== undefined) parts.push(sql`p.geometry_type = ${f.geometryType}`)
  const words = searchWords(f.q)
  if (words.length) parts.push(searchCondition(words))
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

/** The dataset's extent, [min lon, min lat, max lon, max lat]; null when it has no placemark. */
export async function placemarkExtent (db: Db): Promise<[number, number, number, number] | null> {
  const { rows: [row] } = await sql<{ min_lon: number | null; min_lat: number; max_lon: number; max_lat: number }>`
    SELECT min((bbox[1])[0]) AS min_lon, min((bbox[1])[1]) AS min_lat, max((bbox[0])[0]) AS max_lon, max((bbox[0])[1]) AS max_lat
    FROM placemarks`.execute(db)
  if (!row || row.min_lon === null) return null
  return [row.min_lon, row.min_lat, row.max_lon, row.max_lat]
}
