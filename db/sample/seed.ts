import { createReadStream } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sql } from '../kysely.ts'
import type { DatabaseHandle } from '../index.ts'
import { type ImportSummary } from '../../lib/import/placemarks.ts'
import { importPlacemarks } from '../placemark-import.ts'

export const samplePath = fileURLToPath(new URL('./sample.kml', import.meta.url))
// The sample's names hold Las Vegas local times.
export const sampleTimeZone = 'America/Los_Angeles'

export async function seedSample (handle: DatabaseHandle): Promise<ImportSummary> {
  return importPlacemarks(handle, createReadStream(samplePath), { timeZone: sampleTimeZone, source: 'sample.kml' })
}

// First start only: a database that has ever been imported into is left alone.
export async function seedSampleIfEmpty (handle: DatabaseHandle): Promise<ImportSummary | null> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM dataset`.execute(handle.db)
  if (rows[0].n > 0) return null
  return seedSample(handle)
}

/** Whether the database holds a placemark dataset and any guild activity (a start names what is missing). */
export async function datasetAndActivityPresent (handle: DatabaseHandle): Promise<{ dataset: boolean; activity: boolean }> {
  const { rows } = await sql<{ dataset: boolean; activity: boolean }>`
    SELECT EXISTS (SELECT 1 FROM dataset) AS dataset, EXISTS (SELECT 1 FROM activity_users) AS activity`.execute(handle.db)
  return rows[0]
}
