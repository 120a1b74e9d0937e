// Imports call zonedToUtc once per placemark, and building an Intl formatter is the slow part.
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterFor (tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric'
    })
    formatters.set(tz, f)
  }
  return f
}

export function isValidTimeZone (tz: string): boolean {
  if (typeof tz !== 'string' || tz.trim() === '') return false
  try {
    formatterFor(tz)
    return true
  } catch {
    return false
  }
}

// Date.UTC maps years 0..99 to 1900..1999; setUTCFullYear takes the year literally.
function utcMs (y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const date = new Date(0)
  date.setUTCFullYear(y, mo - 1, d)
  date.setUTCHours(h, mi, s, 0)
  return date.getTime()
}

// The zone's offset from UTC at an instant in ms (wall clock = instant + offset); the formatter has whole seconds only.
function offsetAt (instant: number, tz: string): number {
  const seconds = Math.floor(instant / 1000) * 1000
  let y = 0; let mo = 1; let d = 1; let h = 0; let mi = 0; let s = 0
  let bc = false
  for (const part of formatterFor(tz).formatToParts(new Date(seconds))) {
    switch (part.type) {
      case 'year': y = Number(part.value); break
      case 'month': mo = Number(part.value); break
      case 'day': d = Number(part.value); break
      case 'hour': h = Number(part.value) % 24; break
      case 'minute': mi = Number(part.value); break
      case 'second': s = Number(part.value); break
      case 'era': bc = /^B/i.test(part.value); break
    }
  }
  if (bc) y = 1 - y
  return utcMs(y, mo, d, h, mi, s) - seconds
}

const DAY = 86_400_000
const HOUR = 3_600_000
const hourOffsets = new Map<string, Map<number, number | null>>()

// Offsets change at most once in any hour, so an hour whose two ends agree has one offset throughout;
// caching it per hour keeps Intl (the slow part of an import) off the per-placemark path.
function cachedOffsetAt (instant: number, tz: string): number {
  if (tz === 'UTC' || tz === 'Etc/UTC') return 0
  let hours = hourOffsets.get(tz)
  if (hours === undefined) {
    hours = new Map()
    hourOffsets.set(tz, hours)
  }
  const hour = Math.floor(instant / HOUR)
  let offset = hours.get(hour)
  if (offset === undefined) {
    if (hours.size > 200_000) hours.clear()
    const start = offsetAt(hour * HOUR, tz)
    offset = start === offsetAt(hour * HOUR + HOUR - 1000, tz) ? start : null
    hours.set(hour, offset)
  }
  return offset ?? offsetAt(instant, tz)
}

/**
 * The UTC instant of a wall-clock time in an IANA zone. A time inside a spring-forward gap moves
 * forward by the gap; a time repeated by a fall-back overlap takes its first (earlier) occurrence.
 * Throws RangeError for an unknown zone.
 */
export function zonedToUtc (y: number, mo: number, d: number, h: number, mi: number, s: number, tz: string): Date {
  const wall = utcMs(y, mo, d, h, mi, s)
  // Offsets never exceed a day, so the offsets a day either side are those before and after any nearby change.
  const before = cachedOffsetAt(wall - DAY, tz)
  const after = cachedOffsetAt(wall + DAY, tz)
  let best: number | null = null
  for (const offset of before === after ? [before] : [before, after]) {
    const instant = wall - offset
    if (instant + cachedOffsetAt(instant, tz) === wall && (best === null || instant < best)) best = instant
  }
  // No offset reproduces the wall time, so it is in a gap: reading it with the earlier offset lands past the gap.
  return new Date(best ?? wall - before)
}
