import { zonedToUtc } from './timezone.ts'

export interface NameDate {
  date: string
  timestamp: string | null
  sortKey: string
  approximate: boolean
}

const SP = '[\\s\\u00a0]'
// Date at the start: M/D/YYYY or YYYY-MM-DD; then an optional time, possibly after '~' (about).
const US_DATE = new RegExp(`^${SP}*(\\d{1,2})/(\\d{1,2})/(\\d{4})(?![\\d])`)
const ISO_DATE = new RegExp(`^${SP}*(\\d{4})-(\\d{2})-(\\d{2})(?![\\d])`)
const TIME = new RegExp(`^(?:${SP}+|T)(~${SP}*)?(\\d{1,2}):(\\d{2})(?::(\\d{2})(?:\\.\\d+)?)?(?:${SP}*([AaPp])\\.?[Mm]\\.?(?![A-Za-z]))?(Z|[+-]\\d{2}:?\\d{2})?`)
const APPROX_TIME = new RegExp(`^${SP}*(~${SP}*)(\\d{1,2}):(\\d{2})(?::(\\d{2})(?:\\.\\d+)?)?(?:${SP}*([AaPp])\\.?[Mm]\\.?(?![A-Za-z]))?(Z|[+-]\\d{2}:?\\d{2})?`)

const pad = (n: number, w = 2) => String(n).padStart(w, '0')

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate()
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

// After the date or time there must be a boundary: the end, white space or punctuation.
function atBoundary(rest: string): boolean {
  return rest === '' || !/^[A-Za-z0-9]/.test(rest)
}

export function parseNameDate(name: string, timeZone: string): NameDate | null {
  let m = US_DATE.exec(name)
  let y: number, mo: number, d: number
  let iso8601 = false
  if (m) {
    mo = Number(m[1]); d = Number(m[2]); y = Number(m[3])
  } else {
    m = ISO_DATE.exec(name)
    if (!m) return null
    y = Number(m[1]); mo = Number(m[2]); d = Number(m[3])
    iso8601 = true
  }
  const rest = name.slice(m[0].length)
  if (!atBoundary(rest) && !(iso8601 && rest.startsWith('T'))) return null
  if (!validDate(y, mo, d)) return null
  const date = `${pad(y, 4)}-${pad(mo)}-${pad(d)}`
  const midnight = zonedToUtc(y, mo, d, 0, 0, 0, timeZone).getTime()
  const dateOnly: NameDate = { date, timestamp: null, sortKey: iso(midnight), approximate: false }

  const t = TIME.exec(rest) ?? APPROX_TIME.exec(rest)
  if (!t) return dateOnly
  if (!atBoundary(rest.slice(t[0].length))) return dateOnly
  const approximate = Boolean(t[1])
  let hour = Number(t[2])
  const minute = Number(t[3])
  const second = t[4] === undefined ? 0 : Number(t[4])
  const meridiem = t[5]?.toUpperCase()
  const offset = t[6]
  if (minute > 59 || second > 59) return { ...dateOnly, approximate }
  if (meridiem) {
    if (hour < 1 || hour > 12) return { ...dateOnly, approximate }
    hour = (hour % 12) + (meridiem === 'P' ? 12 : 0)
  } else if (hour > 23) {
    return { ...dateOnly, approximate }
  }
  let ms: number
  if (offset && iso8601) {
    const sign = offset === 'Z' ? 0 : offset[0] === '-' ? -1 : 1
    const digits = offset.replace(/[^0-9]/g, '')
    const offMin = sign === 0 ? 0 : sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)))
    ms = Date.UTC(y, mo - 1, d, hour, minute, second) - offMin * 60_000
  } else {
    ms = zonedToUtc(y, mo, d, hour, minute, second, timeZone).getTime()
  }
  const timestamp = iso(ms)
  return { date, timestamp, sortKey: timestamp, approximate }
}
