import { parseInstant } from './instant.ts'
import { ACTIVITY_TYPES, type ActivityType } from './event.ts'
import { isValidTimeZone } from '../timeline/timezone.ts'
import { cursorCodec, type CursorCodec } from '../cursor.ts'

export const DAY_MS = 86_400_000
export const WEEK_MS = 7 * DAY_MS

/**
 * Strings compared byte by byte in UTF-8, as PostgreSQL's COLLATE "C" does. UTF-8 byte order is code point
 * order, which UTF-16 code unit order matches unless a surrogate (a code point past U+FFFF) meets a unit
 * of U+E000..U+FFFF: so the first differing units decide, and only a surrogate there takes the encoded
 * comparison. Nothing is allocated for the ids this sorts (digits), thousands of times per answer.
 */
export function compareBytes (a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    if ((x >= 0xd800 && x <= 0xdfff) || (y >= 0xd800 && y <= 0xdfff)) return Buffer.compare(Buffer.from(a), Buffer.from(b))
    return x < y ? -1 : 1
  }
  return a.length < b.length ? -1 : 1
}

/**
 * p / q rounded to 4 decimals, half away from zero, computed exactly on the integers (a ratio whose
 * denominator is 0 is 0). Counts stay far below 2^53 / 20000, so the arithmetic is exact.
 */
export function roundRatio (p: number, q: number): number {
  if (q === 0) return 0
  const negative = (p < 0) !== (q < 0) && p !== 0
  const a = Math.abs(p)
  const b = Math.abs(q)
  const tenThousandths = Math.floor((a * 20000 + b) / (2 * b))
  const value = tenThousandths / 10000
  return negative && value !== 0 ? -value : value
}

export interface Window {
  // null: from the beginning of the data.
  since: number | null
  until: number
}

/**
 * The window [since, until) of an analytics query from its `since` and `until` (ISO 8601 as ghosts
 * reads them): until defaults to now; since to the beginning of data, or `defaultSpanMs` before until
 * when given. A string that is not an instant, or since >= until, is the error's message.
 */
export function resolveWindow (q: { since?: string; until?: string }, now: number, defaultSpanMs?: number): Window | string {
  const read = (name: string, text: string | undefined): number | null | string => {
    if (text === undefined) return null
    const ms = parseInstant(text, { requireZone: false, allowDateOnly: true })
    return ms === null ? `querystring/${name} must be an ISO 8601 date-time` : ms
  }
  const since = read('since', q.since)
  if (typeof since === 'string') return since
  const until = read('until', q.until)
  if (typeof until === 'string') return until
  const end = until ?? now
  const start = since ?? (defaultSpanMs === undefined ? null : end - defaultSpanMs)
  if (start !== null && start >= end) return 'querystring/since must be before until'
  return { since: start, until: end }
}

/** The window of the same length just before [since, until). */
export const previousWindow = (w: { since: number; until: number }) => ({ since: w.since - (w.until - w.since), until: w.since })

/** An IANA zone name PostgreSQL and Intl read alike; offsets and POSIX strings (whose sign PostgreSQL inverts) are refused. */
export function isIanaTimeZone (tz: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(tz) && !/^(UTC|GMT)[+-]/i.test(tz) && isValidTimeZone(tz)
}

/** The `types` filter of a member's timeline: distinct known names, or the message of the 400. */
export function parseTypes (text: string | undefined): ActivityType[] | null | string {
  if (text === undefined) return null
  const names = text.split(',').map((s) => s.trim())
  const unknown = names.find((n) => !(ACTIVITY_TYPES as readonly string[]).includes(n))
  if (unknown !== undefined) return `querystring/types: unknown type ${JSON.stringify(unknown)} (known: ${ACTIVITY_TYPES.join(', ')})`
  return ACTIVITY_TYPES.filter((type) => names.includes(type))
}

export type Direction = 'up' | 'down' | 'steady'
export function shiftDirection (current: number, previous: number): Direction {
  if (current >= 2 * previous) return 'up'
  if (2 * current <= previous) return 'down'
  return 'steady'
}

/** What the suspicion score of a member is computed from, counted over the window. */
export interface SuspicionCounts {
  typing: number
  messages: number
  deletes: number
  roleChanges: number
  presence: number
  multiClientPresence: number
  reactionsWithLatency: number
  fastReactions: number
  // The window has a since and the member's first event in the guild ever is in it.
  newcomer: boolean
}

export interface SuspicionFactors { ghost: number; multiClient: number; deletes: number; roleChurn: number; fastReactions: number; newcomer: number }

// Each factor as an exact fraction [numerator, denominator] with its weight in hundredths.
function fractions (c: SuspicionCounts): Record<keyof SuspicionFactors, [number, number, number]> {
  return {
    ghost: [c.typing, c.typing + c.messages, 25],
    multiClient: [c.multiClientPresence, c.presence, 20],
    deletes: [Math.min(c.deletes, Math.max(c.messages, 1)), Math.max(c.messages, 1), 20],
    roleChurn: [Math.min(c.roleChanges, 5), 5, 15],
    fastReactions: [c.fastReactions, c.reactionsWithLatency, 10],
    newcomer: [c.newcomer ? 1 : 0, 1, 10]
  }
}

/**
 * The suspicion score (0..100) and its factors rounded to 4 decimals. The score is
 * round(100 x sum(weight x factor)) over the exact factors, half rounded up, computed on exact
 * fractions (BigInt) so that a sum that is exactly x.5 rounds up and no float error moves it.
 */
export function suspicion (c: SuspicionCounts): { score: number; factors: SuspicionFactors } {
  const parts = fractions(c)
  const factors = {} as SuspicionFactors
  let sum = 0
  for (const name in parts) {
    const [p, q, weight] = parts[name as keyof SuspicionFactors]
    factors[name as keyof SuspicionFactors] = roundRatio(p, q)
    if (q !== 0) sum += weight * p / q
  }
  // The float sum is within a few units of 1e-13 of the exact one: only a sum that close to x.5 needs the
  // exact fractions to decide which way it rounds.
  const fraction = sum - Math.floor(sum)
  if (Math.abs(fraction - 0.5) > 1e-9) return { score: Math.floor(sum + 0.5), factors }
  return { score: exactScore(parts), factors }
}

// round(sum(weight x p / q)), half up, on exact fractions: in safe integers while they fit, else BigInt.
function exactScore (parts: Record<keyof SuspicionFactors, [number, number, number]>): number {
  let num = 0
  let den = 1
  for (const [p, q, weight] of Object.values(parts)) {
    if (q === 0 || p === 0) continue
    const nextNum = num * q + weight * p * den
    const nextDen = den * q
    if (!Number.isSafeInteger(nextNum) || !Number.isSafeInteger(nextDen) || !Number.isSafeInteger(2 * nextNum + nextDen)) return bigScore(parts)
    num = nextNum
    den = nextDen
  }
  // Integer division: a float quotient could round up to the next integer.
  const twice = 2 * num + den
  return (twice - (twice % (2 * den))) / (2 * den)
}

function bigScore (parts: Record<keyof SuspicionFactors, [number, number, number]>): number {
  let num = 0n
  let den = 1n
  for (const [p, q, weight] of Object.values(parts)) {
    if (q === 0 || p === 0) continue
    num = num * BigInt(q) + BigInt(weight) * BigInt(p) * den
    den = den * BigInt(q)
  }
  return Number((2n * num + den) / (2n * den))
}

/** A timeline page's place: the last event shown (its instant and seq) and the window's end the first page fixed. */
export interface TimelinePosition { at: number; seq: string; until: number }

const isTimelinePosition = (v: unknown): v is TimelinePosition => {
  const p = v as TimelinePosition
  return typeof p === 'object' && p !== null && typeof p.at === 'number' && typeof p.seq === 'string' && typeof p.until === 'number'
}

/** The member timeline's cursors, sealed and bound to every other parameter of the query (lib/cursor.ts). */
export const timelineCursors = (secret: string | undefined): CursorCodec<TimelinePosition> => cursorCodec('member-activity', secret, isTimelinePosition)
