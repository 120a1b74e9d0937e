import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'
import { countDatasetFacts } from '../dataset-facts.ts'
import type { Database } from '../types.ts'

/**
 * The served dataset's facts (placemarks per geometry type, top folders, extent, time extent) stored with
 * it (db/dataset-facts.ts): an import counts them as it reads; a dataset imported before has them counted
 * here, once, from its table.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  const { rows: [row] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM dataset`.execute(db)
  if (row.n === 0) return
  const facts = await countDatasetFacts(db as unknown as Kysely<Database>)
  await sql`UPDATE dataset SET summary = summary || jsonb_build_object('facts', ${JSON.stringify(facts)}::jsonb) WHERE id = 1`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`UPDATE dataset SET summary = summary - 'facts'`.execute(db)
}
