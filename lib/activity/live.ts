import { ACTIVITY_TYPES, type ActivityType } from './event.ts'

/**
 * What one load stored for one guild, as the load announces it on the change bus (the key of an
 * `activity` change, written by db/activity-load.ts): the guild, the events in all and per type, the
 * greatest createdAt in milliseconds, and the load's transaction, which makes the key unique.
 */
export interface ActivityChange {
  guildId: string
  events: number
  types: Partial<Record<ActivityType, number>>
  lastEventAt: number
  load: string
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0

/** An `activity` change's key read back; null for anything that is not one. */
export function parseActivityChange (key: string): ActivityChange | null {
  let value: Partial<ActivityChange>
  try {
    value = JSON.parse(key) as Partial<ActivityChange>
  } catch {
    return null
  }
  if (typeof value !== 'object' || value === null || typeof value.guildId !== 'string' || typeof value.load !== 'string' ||
    !isCount(value.events) || typeof value.lastEventAt !== 'number' || !Number.isFinite(value.lastEventAt) ||
    typeof value.types !== 'object' || value.types === null) return null
  const types: Partial<Record<ActivityType, number>> = {}
  for (const [type, n] of Object.entries(value.types)) {
    if (!(ACTIVITY_TYPES as readonly string[]).includes(type) || !isCount(n)) return null
    types[type as ActivityType] = n
  }
  return { guildId: value.guildId, events: value.events, types, lastEventAt: value.lastEventAt, load: value.load }
}

/** What a guild's stream has not sent yet: the sum of the changes since its previous message. */
export interface ActivitySummary {
  guildId: string
  events: number
  types: Partial<Record<ActivityType, number>>
  lastEventAt: number
}

/** The summary with one more change added (a new object: the previous one may be in use). */
export function addActivity (summary: ActivitySummary | null, change: ActivitySummary): ActivitySummary {
  if (summary === null) return { guildId: change.guildId, events: change.events, types: { ...change.types }, lastEventAt: change.lastEventAt }
  const types = { ...summary.types }
  for (const type of ACTIVITY_TYPES) {
    const n = change.types[type]
    if (n !== undefined) types[type] = (types[type] ?? 0) + n
  }
  return { guildId: summary.guildId, events: summary.events + change.events, types, lastEventAt: Math.max(summary.lastEventAt, change.lastEventAt) }
}

/** The `data` of an `activity` message: the types in their canonical order, the instant in ISO 8601. */
export function activityData (s: ActivitySummary): { guildId: string; events: number; types: Partial<Record<ActivityType, number>>; lastEventAt: string } {
  const types: Partial<Record<ActivityType, number>> = {}
  for (const type of ACTIVITY_TYPES) if (s.types[type] !== undefined) types[type] = s.types[type]
  return { guildId: s.guildId, events: s.events, types, lastEventAt: new Date(s.lastEventAt).toISOString() }
}
