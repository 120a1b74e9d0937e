import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { TOP_FOLDERS, type DatasetFactsT } from '../lib/import/dataset-facts.ts'

type Db = Kysely<Database>

/**
 * The served dataset's facts (lib/import/dataset-facts.ts), as its import counted them and stored them
 * with it (`dataset.summary.facts`, in the import's transaction): one row read, whatever the dataset's
 * size. Null before the first import.
 */
export async function datasetFacts (db: Db): Promise<{ placemarks: number; timezone: string; facts: DatasetFactsT } | null> {
  const { rows: [row] } = await sql<{ summary: string | { placemarks: number; facts: DatasetFactsT }; timezone: string }>`
    SELECT summary, timezone FROM dataset WHERE id = 1`.execute(db)
  if (row === undefined) return null
  const summary = typeof row.summary === 'string' ? JSON.parse(row.summary) as { placemarks: number; facts: DatasetFactsT } : row.summary
  return { placemarks: summary.placemarks, timezone: row.timezone, facts: summary.facts }
}

/**
 * The same facts counted from the placemarks table: full scans (at 10M placemarks some 35 s in all), for
 * a dataset imported before its import counted them (migration 027) and for the tests that hold the two
 * equal.
 */
export async function countDatasetFacts (db: Db): Promise<DatasetFactsT> {
  const [types, folders, extent, time] = await Promise.all([
    sql<{ geometry_type: string; n: number }>`
      SELECT geometry_type, count(*)::int AS n FROM placemarks GROUP BY geometry_type ORDER BY geometry_type COLLATE "C"`.execute(db),
    sql<{ name: string; n: number }>`
      SELECT f.name, count(DISTINCT p.id)::int AS n
      FROM placemarks p CROSS JOIN LATERAL unnest(p.folder_path) AS f(name)
      GROUP BY f.name ORDER BY n DESC, f.name COLLATE "C" LIMIT ${TOP_FOLDERS}`.execute(db),
    sql<{ min_lon: number | null; min_lat: number; max_lon: number; max_lat: number }>`
      SELECT min((bbox[1])[0]) AS min_lon, min((bbox[1])[1]) AS min_lat, max((bbox[0])[0]) AS max_lon, max((bbox[0])[1]) AS max_lat
      FROM placemarks`.execute(db),
    sql<{ timed: boolean; open_begin: boolean; open_end: boolean; time_begin: string | null; time_end: string | null }>`
      SELECT count(*) > 0 AS timed, bool_or(time_begin IS NULL) AS open_begin, bool_or(time_end IS NULL) AS open_end,
        to_char(min(time_begin) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time_begin,
        to_char(max(time_end) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time_end
      FROM placemarks WHERE time_begin IS NOT NULL OR time_end IS NOT NULL`.execute(db)
  ])
  const e = extent.rows[0]
  const t = time.rows[0]
  return {
    geometry_types: types.rows.map((r) => [r.geometry_type, r.n]),
    top_folders: folders.rows.map((r) => [r.name, r.n]),
    extent: e === undefined || e.min_lon === null ? null : [e.min_lon, e.min_lat, e.max_lon, e.max_lat],
    time_extent: t?.timed ? [t.open_begin ? null : t.time_begin, t.open_end ? null : t.time_end] : null
  }
}
