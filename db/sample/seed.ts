import { createReadStream } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sql, type Kysely } from 'kysely'
import type { Database } from '../types.ts'
import { importPlacemarks, type ImportSummary } from '../../lib/import/placemarks.ts'

export const samplePath = fileURLToPath(new URL('./sample.kml', import.meta.url))
// The sample's names hold Las Vegas local times.
export const sampleTimeZone = 'America/Los_Angeles'

export async function seedSample(db: Kysely<Database>): Promise<ImportSummary> {
  return importPlacemarks(db, createReadStream(samplePath), { timeZone: sampleTimeZone, source: 'sample.kml' })
}

// First start only: a database that has ever been imported into is left alone.
export async function seedSampleIfEmpty(db: Kysely<Database>): Promise<ImportSummary | null> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM dataset`.execute(db)
  if (rows[0].n > 0) return null
  return seedSample(db)
}
