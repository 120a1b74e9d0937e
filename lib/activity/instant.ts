// ISO 8601 / RFC 3339 calendar date, optionally with a time (T, t or space) and a zone (Z or ±hh[:mm]).
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

export interface InstantRules {
  // A time zone designator is required (an event's time must mean one instant).
  requireZone: boolean
  // A bare date means midnight UTC of that day.
  allowDateOnly: boolean
}

// Instants whose UTC year has four digits, so toISOString() gives a form PostgreSQL reads back.
const MIN_INSTANT = -62135596800000 // 0001-01-01T00:00:00Z
export const MAX_INSTANT = 253402300799999 // 9999-12-31T23:59:59.999Z

const daysInMonth = (year: number, month: number) =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/**
 * Milliseconds since the epoch for a strict ISO 8601 date-time, or null. Unlike Date.parse it refuses
 * impossible fields (2025-02-30, 24:00, +25:00) instead of rolling them over. A time without a zone is
 * UTC (when allowed); digits below the millisecond are dropped.
 */
export function parseInstant (text: string, rules: InstantRules): number | null {
  const m = ISO.exec(text)
  if (!m) return null
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  if (h === undefined) return rules.allowDateOnly ? inRange(utc(year, month, day, 0, 0, 0, 0)) : null
  const hour = Number(h)
  const minute = Number(mi)
  const second = s === undefined ? 0 : Number(s)
  if (hour > 23 || minute > 59 || second > 59) return null
  const hasZone = zulu !== undefined || sign !== undefined
  if (rules.requireZone && !hasZone) return null
  let offsetMinutes = 0
  if (sign !== undefined) {
    const offH = Number(oh)
    const offM = om === undefined ? 0 : Number(om)
    if (offH > 23 || offM > 59) return null
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM)
  }
  const ms = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0'))
  return inRange(utc(year, month, day, hour, minute, second, ms) - offsetMinutes * 60_000)
}

const inRange = (ms: number): number | null => (ms >= MIN_INSTANT && ms <= MAX_INSTANT ? ms : null)

function utc (year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  if (year >= 100) return Date.UTC(year, month - 1, day, hour, minute, second, ms)
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms))
  // Date.UTC maps years 0..99 to 1900..1999; setting the year afterwards keeps it literal.
  date.setUTCFullYear(year)
  return date.getTime()
}

const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'))
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'))

/**
 * A formatter equal to `new Date(ms).toISOString()` for instants in years 1970..9999, several times
 * faster when consecutive calls fall on the same day (it keeps the last day's date part).
 */
export function isoFormatter (): (ms: number) => string {
  let dayStart = NaN
  let prefix = ''
  return (ms) => {
    let t = ms - dayStart
    if (!(t >= 0 && t < 86_400_000)) {
      dayStart = ms - (((ms % 86_400_000) + 86_400_000) % 86_400_000)
      prefix = new Date(dayStart).toISOString().slice(0, 11)
      t = ms - dayStart
    }
    const hour = Math.floor(t / 3_600_000)
    const minute = Math.floor(t / 60_000) % 60
    const second = Math.floor(t / 1000) % 60
    return `${prefix}${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[second]}.${THREE_DIGITS[t % 1000]}Z`
  }
}
