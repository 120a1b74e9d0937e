import { parseInstant } from './instant.ts'
import { isCanonical } from './rollup.ts'
import { describeDuration, requiredDurationMs } from '../duration.ts'

export const ACTIVITY_TYPES = ['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave'] as const
export type ActivityType = typeof ACTIVITY_TYPES[number]
export const PRESENCE_STATUSES = ['online', 'idle', 'dnd', 'offline'] as const
export type PresenceStatus = typeof PRESENCE_STATUSES[number]
// In this order wherever clients are listed.
export const CLIENT_KINDS = ['desktop', 'web', 'mobile'] as const
export type ClientKind = typeof CLIENT_KINDS[number]
export const ROLE_CHANGES = ['added', 'removed'] as const
export type RoleChange = typeof ROLE_CHANGES[number]

// The types that carry a channel: required for these, optional (when given) for the others.
export const CHANNEL_TYPES: readonly ActivityType[] = ['message', 'typing', 'message_delete', 'reaction']

/**
 * One event of a guild member; createdAt is an ISO 8601 UTC instant. Fields beyond the common ones
 * belong to their type: latencyMs to reactions, status and clients to presence, roleId and change to
 * role changes.
 */
export interface ActivityEvent {
  // Unique per guild when given: a second event with the same (guildId, id) is a duplicate and skipped.
  id?: string
  type: ActivityType
  guildId: string
  channelId?: string
  userId: string
  username: string
  createdAt: string
  latencyMs?: number
  status?: PresenceStatus
  clients?: ClientKind[]
  roleId?: string
  change?: RoleChange
}

export const MAX_ID_LENGTH = 64
export const MAX_USERNAME_LENGTH = 100
// latency_ms is an int4.
export const MAX_LATENCY_MS = 2_147_483_647

// PostgreSQL text cannot hold NUL, so such a value would fail the whole load instead of one event.
export const checkText = (value: unknown, name: string, max: number): string | null => {
  if (typeof value !== 'string') return `${name} must be a string`
  if (value.trim().length === 0) return `${name} must not be empty`
  if (value.length > max) return `${name} must be at most ${max} characters`
  if (value.includes('\u0000')) return `${name} must not contain NUL characters`
  return null
}

const quoted = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ')

/** The instants an ingested event's createdAt may take, both included; skew says how far past now notAfter is. */
export interface CreatedAtRange { notBefore: number; notAfter: number; skew: string }

export interface CreatedAtSettings { ACTIVITY_MAX_FUTURE: string; ACTIVITY_MIN_DATE: string }

/**
 * ACTIVITY_MIN_DATE and ACTIVITY_MAX_FUTURE, read once (a bad value throws, naming the setting): the range
 * of createdAt accepted at a given moment. An event dated later than the skew past now would stay the
 * member's latest (its username answered everywhere, its counts in every window ending now) until real
 * time caught up with it; one before the floor is a wrong clock, not history.
 */
export function createdAtRule (settings: CreatedAtSettings, started = Date.now()): (now: number) => CreatedAtRange {
  const maxFutureMs = requiredDurationMs('ACTIVITY_MAX_FUTURE', settings.ACTIVITY_MAX_FUTURE)
  const notBefore = parseInstant(settings.ACTIVITY_MIN_DATE.trim(), { requireZone: false, allowDateOnly: true })
  if (notBefore === null) {
    throw new Error(`invalid configuration: ACTIVITY_MIN_DATE is not a date (got ${JSON.stringify(settings.ACTIVITY_MIN_DATE)}; use an ISO 8601 date or date-time such as 2015-01-01)`)
  }
  if (notBefore > started + maxFutureMs) {
    throw new Error(`invalid configuration: ACTIVITY_MIN_DATE is in the future (${new Date(notBefore).toISOString()}): every event would be refused`)
  }
  const skew = describeDuration(maxFutureMs)
  return (now) => ({ notBefore, notAfter: now + maxFutureMs, skew })
}

/**
 * Validates one event (a parsed NDJSON line or an element of a POST body): the event, normalised
 * (createdAt as a UTC ISO instant, only its type's fields, clients defaulting to []), or the reason it
 * is refused. createdAt must fall in the range. Unknown properties are ignored, as are fields of other types.
 */
export function validateActivityEvent (value: unknown, range: CreatedAtRange): ActivityEvent | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object'
  const o = value as Record<string, unknown>
  if (typeof o.type !== 'string' || !(ACTIVITY_TYPES as readonly string[]).includes(o.type)) return `type must be one of ${quoted(ACTIVITY_TYPES)}`
  const type = o.type as ActivityType
  for (const key of ['guildId', 'userId'] as const) {
    const problem = checkText(o[key], key, MAX_ID_LENGTH)
    if (problem) return problem
  }
  if (o.id !== undefined) {
    const problem = checkText(o.id, 'id', MAX_ID_LENGTH)
    if (problem) return problem
  }
  if (CHANNEL_TYPES.includes(type) || o.channelId !== undefined) {
    const problem = checkText(o.channelId, 'channelId', MAX_ID_LENGTH)
    if (problem) return CHANNEL_TYPES.includes(type) && o.channelId === undefined ? `channelId is required for type "${type}"` : problem
  }
  const problem = checkText(o.username, 'username', MAX_USERNAME_LENGTH)
  if (problem) return problem
  const at = typeof o.createdAt === 'string' ? parseInstant(o.createdAt, { requireZone: true, allowDateOnly: false }) : null
  if (at === null) return 'createdAt must be an ISO 8601 date-time with a time zone (e.g. 2025-05-01T12:00:00Z)'
  if (at > range.notAfter) return `createdAt must not be more than ${range.skew} in the future (later than ${new Date(range.notAfter).toISOString()})`
  if (at < range.notBefore) return `createdAt must not be before ${new Date(range.notBefore).toISOString()}`
  const event: ActivityEvent = {
    type,
    guildId: o.guildId as string,
    userId: o.userId as string,
    username: o.username as string,
    // A createdAt already in toISOString()'s form (parsed above, so its fields are valid) is kept as it is.
    createdAt: isCanonical(o.createdAt as string) ? o.createdAt as string : new Date(at).toISOString()
  }
  if (o.id !== undefined) event.id = o.id as string
  if (o.channelId !== undefined) event.channelId = o.channelId as string
  switch (type) {
    case 'reaction':
      if (o.latencyMs !== undefined) {
        if (typeof o.latencyMs !== 'number' || !Number.isInteger(o.latencyMs) || o.latencyMs < 0 || o.latencyMs > MAX_LATENCY_MS) {
          return `latencyMs must be an integer from 0 to ${MAX_LATENCY_MS}`
        }
        event.latencyMs = o.latencyMs
      }
      break
    case 'presence': {
      if (typeof o.status !== 'string' || !(PRESENCE_STATUSES as readonly string[]).includes(o.status)) {
        return `status must be one of ${quoted(PRESENCE_STATUSES)} for type "presence"`
      }
      event.status = o.status as PresenceStatus
      const clients = o.clients ?? []
      if (!Array.isArray(clients) || clients.some((c) => typeof c !== 'string' || !(CLIENT_KINDS as readonly string[]).includes(c))) {
        return `clients must be an array of ${quoted(CLIENT_KINDS)}`
      }
      if (new Set(clients).size !== clients.length) return 'clients must not repeat a value'
      event.clients = clients as ClientKind[]
      break
    }
    case 'role_change': {
      const roleProblem = checkText(o.roleId, 'roleId', MAX_ID_LENGTH)
      if (roleProblem) return o.roleId === undefined ? 'roleId is required for type "role_change"' : roleProblem
      if (typeof o.change !== 'string' || !(ROLE_CHANGES as readonly string[]).includes(o.change)) {
        return `change must be one of ${quoted(ROLE_CHANGES)} for type "role_change"`
      }
      event.roleId = o.roleId as string
      event.change = o.change as RoleChange
      break
    }
  }
  return event
}

/** Stored events per type, as "message 10, typing 21" (types in the order of ACTIVITY_TYPES). */
export function describeTypes (types: Record<string, number>): string {
  const parts = ACTIVITY_TYPES.filter((type) => types[type]).map((type) => `${type} ${types[type]}`)
  return parts.length ? parts.join(', ') : 'none'
}
