import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'

type Db = Kysely<Database>

export interface DatasetIcon { name: string; contentType: string; data: Buffer }

/** One image of the served dataset by its path in the KMZ; undefined when it has none of that name. */
export async function datasetIcon (db: Db, name: string): Promise<DatasetIcon | undefined> {
  const { rows: [row] } = await sql<{ name: string; content_type: string; data: Buffer | Uint8Array }>`
    SELECT name, content_type, data FROM dataset_icons WHERE name = ${name}`.execute(db)
  return row && { name: row.name, contentType: row.content_type, data: Buffer.from(row.data) }
}

export interface DatasetIconEntry { name: string; contentType: string; bytes: number }

/** The served dataset's images, by name (byte order). */
export async function datasetIconList (db: Db): Promise<DatasetIconEntry[]> {
  const { rows } = await sql<{ name: string; content_type: string; bytes: number }>`
    SELECT name, content_type, octet_length(data) AS bytes FROM dataset_icons ORDER BY name`.execute(db)
  return rows.map((r) => ({ name: r.name, contentType: r.content_type, bytes: r.bytes }))
}
