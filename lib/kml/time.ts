/**
 * KML times (`<TimeStamp><when>`, `<TimeSpan><begin>`/`<end>`) in every form KML takes, the XML Schema
 * dateTime, date, gYearMonth and gYear: `2017`, `2017-10`, `2017-10-01`, `2017-10-01T22:09:48Z`,
 * `2017-10-01T22:09:48.5-07:00`, `2017-10-01T22:09:48` (no zone: UTC). A value is the period it names:
 * a year from its first to its last millisecond, a month, a day, or one instant for a date-time.
 */
export interface TimeRange { begin: string; end: string }

const FORM = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/

/** The UTC period of a KML time value (ISO 8601 with milliseconds), or null when it is not one. */
export function kmlTimeRange (text: string): TimeRange | null {
  const m = FORM.exec(text.trim())
  if (!m) return null
  const [, y, mo, d, h, mi, s, frac, zone] = m
  const year = Number(y)
  const month = mo === undefined ? 1 : Number(mo)
  const day = d === undefined ? 1 : Number(d)
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null
  if (h === undefined) {
    const begin = Date.UTC(year, month - 1, day)
    const next = d !== undefined ? Date.UTC(year, month - 1, day + 1) : mo !== undefined ? Date.UTC(year, month, 1) : Date.UTC(year + 1, 0, 1)
    return { begin: iso(begin, year), end: iso(next - 1, year) }
  }
  const hour = Number(h)
  const minute = Number(mi)
  const second = s === undefined ? 0 : Number(s)
  if (hour > 24 || minute > 59 || second > 60 || (hour === 24 && (minute > 0 || second > 0))) return null
  let offset = 0
  if (zone !== undefined && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1
    const [oh, om] = zone.slice(1).split(':').map(Number)
    if (oh > 14 || om > 59) return null
    offset = sign * (oh * 60 + om) * 60_000
  }
  const ms = frac === undefined ? 0 : Math.floor(Number(`0${frac}`) * 1000)
  // A leap second counts as the last millisecond of its minute.
  const at = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), second === 60 ? 999 : ms) - offset
  return { begin: iso(at, year), end: iso(at, year) }
}

// Date.UTC reads years 0..99 as 1900..1999; those are set again by hand.
function iso (ms: number, year: number): string {
  const date = new Date(ms)
  if (year < 100) date.setUTCFullYear(date.getUTCFullYear() - 1900)
  return date.toISOString()
}

/** A placemark's time: a TimeStamp is its own period; a TimeSpan runs from its begin's start to its end's end, either open. */
export function placemarkTime (time: { when?: string; begin?: string; end?: string } | undefined): { begin: string | null; end: string | null } {
  if (time === undefined) return { begin: null, end: null }
  if (time.when !== undefined) {
    const range = kmlTimeRange(time.when)
    if (range) return range
  }
  return {
    begin: time.begin === undefined ? null : kmlTimeRange(time.begin)?.begin ?? null,
    end: time.end === undefined ? null : kmlTimeRange(time.end)?.end ?? null
  }
}

/** A placemark's time as written: a TimeStamp's `when`, or a TimeSpan's `begin` and `end` (either may be absent). */
export type WrittenTime = { when: string } | { begin?: string; end?: string }

/**
 * The element and texts placemarkTime read the placemark's time from (only the values that name a
 * period), so that it can be written back as it came: `<TimeStamp><when>1997</when>` stays that. Null
 * when the placemark has no time.
 */
export function writtenTime (time: { when?: string; begin?: string; end?: string } | undefined): WrittenTime | null {
  if (time === undefined) return null
  if (time.when !== undefined && kmlTimeRange(time.when)) return { when: time.when.trim() }
  const span: { begin?: string; end?: string } = {}
  if (time.begin !== undefined && kmlTimeRange(time.begin)) span.begin = time.begin.trim()
  if (time.end !== undefined && kmlTimeRange(time.end)) span.end = time.end.trim()
  return span.begin === undefined && span.end === undefined ? null : span
}
