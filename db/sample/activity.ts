import { sql } from 'kysely'
import type { DatabaseHandle } from '../index.ts'
import { loadActivity, type LoadSummary } from '../../lib/activity/load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'

// Small enough to seed the embedded database in a moment; the demo guild is always the first guild.
export const demoActivity = { guilds: 3, users: 60, events: 5000, seed: 1 }

export async function seedDemoActivityIfEmpty(handle: DatabaseHandle): Promise<LoadSummary | null> {
  const { rows } = await sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM activity_totals) AS any`.execute(handle.db)
  if (rows[0].any) return null
  return loadActivity(handle, syntheticActivity({ ...demoActivity, end: new Date() }))
}
