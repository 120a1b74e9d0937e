import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import type { ActivityEvent } from './event.ts'
import { parseInstant } from './instant.ts'

export const MAX_ID_LENGTH = 64
export const MAX_USERNAME_LENGTH = 100

export type LineResult =
  | { lineNumber: number; event: ActivityEvent; error?: undefined }
  | { lineNumber: number; error: string; event?: undefined }

const ID_FIELDS = ['guildId', 'channelId', 'userId'] as const

// PostgreSQL text cannot hold NUL, so such a value would fail the whole load instead of one line.
const checkText = (value: unknown, name: string, max: number): string | null => {
  if (typeof value !== 'string') return `${name} must be a string`
  if (value.trim().length === 0) return `${name} must not be empty`
  if (value.length > max) return `${name} must be at most ${max} characters`
  if (value.includes('\u0000')) return `${name} must not contain NUL characters`
  return null
}

/**
 * Validates one NDJSON line: the event (createdAt normalised to UTC, other fields ignored) or the
 * reason it is refused.
 */
export function parseActivityLine(line: string): ActivityEvent | string {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return 'not valid JSON'
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object'
  const o = value as Record<string, unknown>
  if (o.type !== 'typing' && o.type !== 'message') return 'type must be "typing" or "message"'
  for (const key of ID_FIELDS) {
    const problem = checkText(o[key], key, MAX_ID_LENGTH)
    if (problem) return problem
  }
  const problem = checkText(o.username, 'username', MAX_USERNAME_LENGTH)
  if (problem) return problem
  const at = typeof o.createdAt === 'string' ? parseInstant(o.createdAt, { requireZone: true, allowDateOnly: false }) : null
  if (at === null) {
    return 'createdAt must be an ISO 8601 date-time with a time zone (e.g. 2025-05-01T12:00:00Z)'
  }
  return {
    type: o.type,
    guildId: o.guildId as string,
    channelId: o.channelId as string,
    userId: o.userId as string,
    username: o.username as string,
    createdAt: new Date(at).toISOString()
  }
}

/** Streams an NDJSON source line by line with 1-based line numbers; blank lines are skipped. */
export async function* readActivityLines(input: Readable): AsyncGenerator<LineResult> {
  let lineNumber = 0
  for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
    lineNumber++
    // A UTF-8 byte order mark is not part of the first object.
    const line = lineNumber === 1 && raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw
    if (line.trim() === '') continue
    const result = parseActivityLine(line)
    yield typeof result === 'string' ? { lineNumber, error: result } : { lineNumber, event: result }
  }
}
