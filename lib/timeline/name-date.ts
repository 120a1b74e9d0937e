import { zonedToUtc } from './timezone.ts'

export interface NameDate {
  /** Local calendar date as written in the name, 'YYYY-MM-DD'. */
  date: string
  /** ISO 8601 UTC instant without milliseconds; null for a date with no (possible) time. */
  timestamp: string | null
  /** ISO UTC instant for ordering: the timestamp, or local midnight of `date` for a date-only event. */
  sortKey: string
  /** A '~' stood before the time. */
  approximate: boolean
  /** The AM or PM written after the time, when one is. */
  meridiem?: 'am' | 'pm'
  /**
   * An `M/D/YYYY` time with no AM/PM and an hour of 1..12: the clock as written. `timestamp` reads it as
   * 24-hour; the timeline reads it as AM or PM from its neighbours (lib/timeline/meridiem.ts).
   */
  ambiguous?: { hour: number; minute: number; second: number }
}

// \s already covers U+00A0 and tabs; spelled out so the intent survives edits.
const WS = '[\\s\\u00a0]'
// A date must not run on into a letter or digit ('10/1/2017abc', '10/1/20175').
const END = '(?![\\p{L}\\p{N}])'

const US_DATE = /^(\d{1,2})\/(\d{1,2})\/(\d{4})/u
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})/u

// Shared time shape: H:MM[:SS[.fff]] then an optional AM/PM (a.m./p.m.) that must itself end at a boundary.
const CLOCK = `(\\d{1,2}):(\\d{2})(?::(\\d{2})(?:\\.(\\d+))?)?(?:${WS}*([ap])(?:\\.${WS}?)?m\\.?${END})?`
// Whitespace-separated time, optionally preceded by '~' (about).
const SPACED_TIME = new RegExp(`^(?:${WS}*(~)${WS}*|${WS}+)${CLOCK}`, 'iu')
// ISO dates may also join the time with 'T' and carry an explicit offset.
const ISO_TIME = new RegExp(`^(?:${WS}*(~)${WS}*|${WS}+|T)${CLOCK}(Z|[+-]\\d{2}(?::?\\d{2})?)?`, 'iu')
const BOUNDARY = new RegExp(`^${END}`, 'u')
// A time must not run on into more clock digits either ('10:09:4' is not 10:09 followed by ':4').
const TIME_BOUNDARY = /^(?![\p{L}\p{N}]|[:.]\d)/u

const pad = (n: number, width = 2): string => String(n).padStart(width, '0')

function isLeap (y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
}

function isValidDate (y: number, mo: number, d: number): boolean {
  if (mo < 1 || mo > 12 || d < 1) return false
  const days = [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
  return d <= days
}

// Timestamps are stored to the second, so milliseconds are dropped rather than rounded.
function toIso (ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

// Date.UTC maps years 0..99 to the 1900s; setUTCFullYear does not.
function utcMs (y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, s, 0)
  return date.getTime()
}

/** Offset in minutes for 'Z', '+HH', '+HH:MM' or '+HHMM'; null when out of range. */
function offsetMinutes (text: string): number | null {
  if (text === 'Z' || text === 'z') return 0
  const sign = text[0] === '-' ? -1 : 1
  const digits = text.slice(1).replace(':', '')
  const hours = Number(digits.slice(0, 2))
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0
  if (hours > 23 || minutes > 59) return null
  return sign * (hours * 60 + minutes)
}

/**
 * Reads the date (and time) a placemark name starts with: 'M/D/YYYY [~]H:MM[:SS] [AM|PM] …' or
 * ISO 'YYYY-MM-DD[T| ]HH:MM[:SS[.fff]][Z|±HH:MM] …'. Times are local to `timeZone` unless the
 * name carries an explicit offset. Returns null when the name is not an event.
 */
export function parseNameDate (name: string, timeZone: string): NameDate | null {
  const text = name.replace(/^[\s\u00a0\ufeff]+/u, '')
  let y: number, mo: number, d: number
  let isIso = false
  let m = US_DATE.exec(text)
  if (m) {
    mo = Number(m[1]); d = Number(m[2]); y = Number(m[3])
  } else {
    m = ISO_DATE.exec(text)
    if (!m) return null
    y = Number(m[1]); mo = Number(m[2]); d = Number(m[3])
    isIso = true
  }
  const rest = text.slice(m[0].length)
  // ISO's 'T' is the only letter allowed straight after a date, and only when a time follows it.
  const joinedByT = isIso && /^T/i.test(rest)
  if (!joinedByT && !BOUNDARY.test(rest)) return null
  if (!isValidDate(y, mo, d)) return null

  const date = `${pad(y, 4)}-${pad(mo)}-${pad(d)}`
  const dateOnly = (): NameDate => ({
    date,
    timestamp: null,
    sortKey: toIso(zonedToUtc(y, mo, d, 0, 0, 0, timeZone).getTime()),
    approximate: false
  })

  const t = (isIso ? ISO_TIME : SPACED_TIME).exec(rest)
  const after = t ? rest.slice(t[0].length) : rest
  if (!t || !TIME_BOUNDARY.test(after)) return joinedByT ? null : dateOnly()

  const approximate = t[1] !== undefined
  let hour = Number(t[2])
  const minute = Number(t[3])
  const second = t[4] === undefined ? 0 : Number(t[4])
  const meridiem = t[6]?.toLowerCase()
  const offsetText = isIso ? t[7] : undefined

  // An impossible time leaves a date-only event; the time-like text simply stays in the title.
  if (minute > 59 || second > 59) return dateOnly()
  if (meridiem !== undefined) {
    if (hour < 1 || hour > 12) return dateOnly()
    hour = (hour % 12) + (meridiem === 'p' ? 12 : 0)
  } else if (hour > 23) {
    return dateOnly()
  }

  let instant: number
  if (offsetText !== undefined) {
    const offset = offsetMinutes(offsetText)
    if (offset === null) return dateOnly()
    instant = utcMs(y, mo, d, hour, minute, second) - offset * 60_000
  } else {
    instant = zonedToUtc(y, mo, d, hour, minute, second, timeZone).getTime()
  }
  const timestamp = toIso(instant)
  const out: NameDate = { date, timestamp, sortKey: timestamp, approximate }
  if (meridiem !== undefined) out.meridiem = meridiem === 'p' ? 'pm' : 'am'
  else if (!isIso && hour >= 1 && hour <= 12) out.ambiguous = { hour, minute, second }
  return out
}

/** The UTC instant (as `timestamp` writes it) of a local date `YYYY-MM-DD` and a 12-hour clock read as AM or PM. */
export function meridiemInstant (date: string, clock: { hour: number; minute: number; second: number }, meridiem: 'am' | 'pm', timeZone: string): string {
  const [y, mo, d] = date.split('-').map(Number)
  const hour = (clock.hour % 12) + (meridiem === 'pm' ? 12 : 0)
  return toIso(zonedToUtc(y, mo, d, hour, clock.minute, clock.second, timeZone).getTime())
}
