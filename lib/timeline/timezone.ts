const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz)
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric'
    })
    formatters.set(tz, f)
  }
  return f
}

export function isValidTimeZone(tz: string): boolean {
  if (!tz) return false
  try {
    formatter(tz)
    return true
  } catch {
    return false
  }
}

// Offset of the zone from UTC at an instant, in milliseconds (local = utc + offset).
function offsetAt(utcMs: number, tz: string): number {
  const parts = formatter(tz).formatToParts(new Date(utcMs))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value)
  const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'))
  return local - Math.floor(utcMs / 1000) * 1000
}

/**
 * The UTC instant of a wall-clock time in a zone. A time skipped by a spring-forward change moves
 * forward by the gap; a time repeated by a fall-back change takes its first (earlier) occurrence.
 */
export function zonedToUtc(y: number, mo: number, d: number, h: number, mi: number, s: number, tz: string): Date {
  const wall = Date.UTC(y, mo - 1, d, h, mi, s)
  // Offsets a few hours either side cover every transition: try both and keep the ones that round-trip.
  const before = offsetAt(wall - 6 * 3600_000, tz)
  const after = offsetAt(wall + 6 * 3600_000, tz)
  const candidates = [...new Set([before, after])].map((off) => wall - off).filter((utc) => utc + offsetAt(utc, tz) === wall)
  if (candidates.length) return new Date(Math.min(...candidates))
  // In a gap: read the wall time with the offset from before the change, which lands after the gap.
  return new Date(wall - before)
}
