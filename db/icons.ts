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
