import { sql } from '../kysely.ts'
import type { DatabaseHandle } from '../index.ts'
import { loadActivity, type LoadSummary } from '../activity-load.ts'
import { syntheticActivity } from '../../lib/activity/synthetic.ts'

// Small enough to seed the embedded database in a moment; the demo guild is always the first guild.
export const demoActivity = { guilds: 3, users: 60, events: 5000, seed: 1 }

/** Seeds demo guild activity, ending now, when there is no activity at all; null when there was. */
export async function seedDemoActivityIfEmpty (handle: DatabaseHandle): Promise<LoadSummary | null> {
  const { rows } = await sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM activity_users) AS present`.execute(handle.db)
  if (rows[0].present) return null
  // Ending now, so that a recent `since` finds events.
  return loadActivity(handle, syntheticActivity({ ...demoActivity, end: new Date() }))
}
