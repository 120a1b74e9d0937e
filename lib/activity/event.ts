export type ActivityType = 'typing' | 'message'

export interface ActivityEvent {
  type: ActivityType
  guildId: string
  channelId: string
  userId: string
  username: string
  createdAt: string
}

const KEYS = ['type', 'guildId', 'channelId', 'userId', 'username', 'createdAt']
const ID = /^[A-Za-z0-9_-]{1,64}$/
// ISO 8601 date-time with a zone designator, so that a time means one instant.
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/

/** Validates one NDJSON line: the event, or the reason it is refused. */
export function parseActivityLine(line: string): ActivityEvent | string {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return 'not valid JSON'
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object'
  const o = value as Record<string, unknown>
  const extra = Object.keys(o).filter((k) => !KEYS.includes(k))
  if (extra.length) return `unknown field ${extra[0]}`
  if (o.type !== 'typing' && o.type !== 'message') return 'type must be "typing" or "message"'
  for (const key of ['guildId', 'channelId', 'userId'] as const) {
    if (typeof o[key] !== 'string' || !ID.test(o[key] as string)) return `${key} must be an id of 1 to 64 letters, digits, _ or -`
  }
  if (typeof o.username !== 'string' || o.username.length < 1 || o.username.length > 100) return 'username must be a string of 1 to 100 characters'
  if (typeof o.createdAt !== 'string' || !INSTANT.test(o.createdAt) || Number.isNaN(Date.parse(o.createdAt))) {
    return 'createdAt must be an ISO 8601 date-time with a time zone (e.g. 2024-05-01T12:00:00Z)'
  }
  return { type: o.type, guildId: o.guildId as string, channelId: o.channelId as string, userId: o.userId as string, username: o.username, createdAt: new Date(o.createdAt).toISOString() }
}
