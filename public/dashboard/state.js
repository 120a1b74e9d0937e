/*
 * The dashboard's whole state lives in its address (?guild=…&range=7d&tz=…&view=…), so a link shows the
 * same view to someone else and back/forward walk through what was shown. This module reads and writes
 * that query, and turns a window (a preset, or dates in the chosen time zone) into instants.
 */

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The window presets: each ends now. */
export const PRESETS = /** @type {const} */ ({ '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY })
export const DEFAULT_RANGE = '7d'

/** The views, in the order of the page's tabs. */
export const VIEWS = /** @type {const} */ (['overview', 'heatmap', 'ghosts', 'lurkers', 'suspicion', 'shifts', 'roles', 'clients', 'member'])

/** The activity types, in the order the API lists them. */
export const TYPES = /** @type {const} */ (['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave'])

/**
 * @typedef {typeof VIEWS[number]} View
 * @typedef {typeof TYPES[number]} ActivityType
 * @typedef {object} State
 * @property {string} guild the guild's id ('' until one is chosen)
 * @property {string} range a preset (24h, 7d, 30d, 90d) or custom
 * @property {string} from the first local date of a custom window (YYYY-MM-DD)
 * @property {string} to the last local date of a custom window, included
 * @property {string} tz the IANA time zone of dates, days and hours
 * @property {View} view
 * @property {string} member the member shown by the member view
 * @property {ActivityType[]} types the member view's type filter (none: every type)
 * @property {string} channel the heatmap's channel ('' for all)
 * @property {string} sort the column a table is sorted by ('' for the API's order)
 * @property {'asc' | 'desc'} dir
 * @property {string} q the name a table is searched for
 * @property {number} page a table's page, from 1
 * @property {number | null} min a table's threshold (minPresence, minEvents or minScore; null for the API's default)
 */

/** The browser's own time zone. */
export function browserTimeZone () {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

/**
 * Whether Intl knows the zone (and it is a name, not an offset, which the API refuses).
 * @param {string} tz
 */
export function isTimeZone (tz) {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(tz) || /^(UTC|GMT)[+-]/i.test(tz)) return false
  try {
    Intl.DateTimeFormat('en', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

const isDate = (/** @type {string} */ text) => /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`))

/**
 * The state an address holds; whatever is missing or malformed takes its default.
 * @param {string} search the query string (location.search)
 * @returns {State}
 */
export function readState (search) {
  const q = new URLSearchParams(search)
  const get = (/** @type {string} */ name) => (q.get(name) ?? '').trim()
  const view = /** @type {View} */ (VIEWS.find((v) => v === get('view')) ?? 'overview')
  let range = get('range')
  const from = get('from')
  const to = get('to')
  if (range === 'custom' ? !(isDate(from) && isDate(to)) : !(range in PRESETS)) range = DEFAULT_RANGE
  const tz = get('tz')
  const page = Number(get('page'))
  const min = get('min') === '' ? NaN : Number(get('min'))
  return {
    guild: get('guild').slice(0, 64),
    range,
    from: range === 'custom' ? from : '',
    to: range === 'custom' ? to : '',
    tz: isTimeZone(tz) ? tz : browserTimeZone(),
    view,
    member: view === 'member' ? get('member').slice(0, 64) : '',
    types: view === 'member' ? TYPES.filter((t) => get('types').split(',').includes(t)) : [],
    channel: view === 'heatmap' ? get('channel').slice(0, 64) : '',
    sort: get('sort').slice(0, 40),
    dir: get('dir') === 'asc' ? 'asc' : 'desc',
    q: get('q').slice(0, 100),
    page: Number.isInteger(page) && page >= 1 ? page : 1,
    min: Number.isInteger(min) && min >= 0 ? min : null
  }
}

/**
 * The query string of a state, its parameters in a fixed order, defaults left out (the time zone always
 * written, so a link shows the same hours and dates to someone in another zone).
 * @param {State} s
 */
export function writeState (s) {
  /** @type {Array<[string, string]>} */
  const pairs = []
  const add = (/** @type {string} */ name, /** @type {string | number | null} */ value) => { if (value !== '' && value !== null) pairs.push([name, String(value)]) }
  add('guild', s.guild)
  add('range', s.range === DEFAULT_RANGE ? '' : s.range)
  if (s.range === 'custom') { add('from', s.from); add('to', s.to) }
  add('tz', s.tz)
  add('view', s.view === 'overview' ? '' : s.view)
  add('member', s.view === 'member' ? s.member : '')
  add('types', s.view === 'member' ? s.types.join(',') : '')
  add('channel', s.view === 'heatmap' ? s.channel : '')
  add('min', s.min)
  add('sort', s.sort)
  if (s.sort) add('dir', s.dir)
  add('q', s.q)
  add('page', s.page > 1 ? s.page : '')
  return `?${new URLSearchParams(pairs)}`
}

/**
 * The offset of a time zone from UTC at an instant, in milliseconds (east positive).
 * @param {number} instant
 * @param {string} tz
 */
export function zoneOffset (instant, tz) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'
  }).formatToParts(instant).map((p) => [p.type, p.value]))
  const asUtc = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second))
  return asUtc - Math.floor(instant / 1000) * 1000
}

/**
 * The instant a local date begins in a time zone (its first existing minute when a DST change skips midnight).
 * @param {string} date YYYY-MM-DD
 * @param {string} tz
 */
export function startOfLocalDate (date, tz) {
  const wall = Date.parse(`${date}T00:00:00Z`)
  let instant = wall - zoneOffset(wall, tz)
  // The offset at the result may differ from the one at the guess (a DST change that day): once more.
  instant = wall - zoneOffset(instant, tz)
  return localDate(instant, tz) === date ? instant : instant + HOUR
}

/**
 * The local date of an instant in a time zone, YYYY-MM-DD.
 * @param {number} instant
 * @param {string} tz
 */
export function localDate (instant, tz) {
  return new Date(instant + zoneOffset(instant, tz)).toISOString().slice(0, 10)
}

/**
 * The date after a date.
 * @param {string} date YYYY-MM-DD
 */
export function nextDate (date) {
  return new Date(Date.parse(`${date}T00:00:00Z`) + DAY).toISOString().slice(0, 10)
}

/**
 * The window `[since, until)` a state shows at `now`, and whether it reaches the present (so new
 * activity belongs in it). A custom window runs from the start of `from` to the end of `to`, local dates.
 * @param {State} s
 * @param {number} now
 * @returns {{ since: number, until: number, live: boolean } | { error: string }}
 */
export function windowOf (s, now) {
  if (s.range !== 'custom') {
    const span = PRESETS[/** @type {keyof typeof PRESETS} */ (s.range)]
    return { since: now - span, until: now, live: true }
  }
  if (s.from > s.to) return { error: 'The window\'s first date is after its last date' }
  const since = startOfLocalDate(s.from, s.tz)
  const until = startOfLocalDate(nextDate(s.to), s.tz)
  if (since >= now) return { error: 'The window starts in the future: there is no activity in it yet' }
  return { since, until, live: until > now }
}
