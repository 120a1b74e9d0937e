/*
 * The guild dashboard (/dashboard): a client of the public API like any other. It signs in through the
 * shared session module, keeps everything it shows in its address, reads the analytics routes for the
 * chosen guild, window and time zone, and follows the guild's event stream while the window reaches the
 * present, refreshing what it shows soon after new activity is stored.
 */
import { ApiError, Session, tokenClaims } from '../shared/session.js'
import { byId, fill, h } from './dom.js'
import { LiveActivity } from './live.js'
import { PRESETS, TYPES, VIEWS, localDate, readState, windowOf, writeState } from './state.js'
import { MemberTable, TABLES, factorList, formats } from './tables.js'
import { TYPE_LABELS, dailyChart, heatmapGrid } from './charts.js'

/**
 * @typedef {import('./state.js').State} State
 * @typedef {import('./state.js').View} View
 * @typedef {import('./tables.js').Formats} Formats
 * @typedef {{ since: number, until: number, live: boolean }} Window
 * @typedef {{ guildId: string, name: string | null, icon: string | null, members: number, events: number, lastEventAt: string | null }} Guild
 * @typedef {{ key: string, element: HTMLElement, load: (w: Window) => Promise<void>, redraw: (s: State) => void, close?: () => void }} ViewPart
 */

const VIEW_LABELS = { overview: 'Overview', heatmap: 'Heatmap', ghosts: 'Ghosts', lurkers: 'Lurkers', suspicion: 'Suspicion', shifts: 'Shifts', roles: 'Role drift', clients: 'Clients', member: 'Member' }
const RANGE_LABELS = { '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days', '90d': 'Last 90 days', custom: 'Custom dates' }
// The most entries an analytics answer holds: the tables sort, search and page within them.
const TABLE_LIMIT = 1000
// The heatmap's "all channels" are the busiest this many.
const HEATMAP_CHANNELS = 200
const OVERVIEW_CHANNELS = 10
const TIMELINE_PAGE = 50
// New activity refreshes the view this long after its message (later messages meanwhile ride along).
const LIVE_DELAY_MS = 750
// One event's type, as a member's timeline names it.
const EVENT_LABELS = { message: 'Message', typing: 'Typing', message_delete: 'Deletion', reaction: 'Reaction', presence: 'Presence', role_change: 'Role change', join: 'Join', leave: 'Leave' }
const PERMISSION_RULE = 'Reading a guild needs its ownership, or the Administrator or Manage Server (MANAGE_GUILD) permission in it, in the guild list of your last sign-in; or the service role ADMIN.'

let state = readState(location.search)
let signedIn = false
/** @type {Guild[] | null} */
let guilds = null
/** @type {ViewPart | null} */
let current = null
let online = navigator.onLine
/** @type {'off' | 'connecting' | 'live' | 'retrying' | 'refused'} */
let liveState = 'off'
let liveDetail = ''
let windowIsLive = false
/** @type {ReturnType<typeof setTimeout> | undefined} */
let liveTimer

const guildSelect = /** @type {HTMLSelectElement} */ (byId('guild'))
const rangeSelect = /** @type {HTMLSelectElement} */ (byId('range'))
const tzSelect = /** @type {HTMLSelectElement} */ (byId('tz'))
const fromInput = /** @type {HTMLInputElement} */ (byId('from'))
const toInput = /** @type {HTMLInputElement} */ (byId('to'))
const viewBox = byId('view')

// ---- Errors -----------------------------------------------------------------------------------

/**
 * What went wrong, in words: the server's status, reason and message; for a 403, the permission needed.
 * @param {unknown} err
 */
function describe (err) {
  if (err instanceof ApiError) {
    const text = `${err.status} ${err.error}: ${err.message}`
    if (err.status === 403) return `${text}. ${PERMISSION_RULE}`
    if (err.status === 0 && !online) return `${text} (you are offline)`
    return text
  }
  if (err instanceof TypeError) return online ? `The server could not be reached (${err.message})` : 'You are offline: the server could not be reached'
  return err instanceof Error ? err.message : String(err)
}

/** @param {unknown} err */
const errorBox = (err) => h('p', { class: 'error', role: 'alert', 'data-status': err instanceof ApiError ? err.status : null }, describe(err))

// ---- The session --------------------------------------------------------------------------------

const live = new LiveActivity({
  fetch: (path, init) => session.fetch(path, init),
  onActivity (activity) {
    if (activity.guildId !== state.guild || liveTimer !== undefined) return
    liveTimer = setTimeout(() => {
      liveTimer = undefined
      void render(true)
    }, LIVE_DELAY_MS)
  },
  onState (next, detail) {
    liveState = next
    liveDetail = detail ?? ''
    showLive()
  }
})

const session = new Session({
  onSignedOut () {
    signedIn = false
    guilds = null
    live.follow(null)
    current?.close?.()
    current = null
    viewBox.replaceChildren()
    byId('checking').hidden = true
    byId('app').hidden = true
    byId('account').hidden = true
    byId('signed-out').hidden = false
  },
  onToken (accessToken) {
    const { username } = tokenClaims(accessToken)
    byId('user').textContent = typeof username === 'string' ? `Signed in as ${username}` : 'Signed in'
    if (signedIn) return
    signedIn = true
    byId('checking').hidden = true
    byId('signed-out').hidden = true
    byId('account').hidden = false
    byId('app').hidden = false
    void loadGuilds()
  }
})

/**
 * An API answer's JSON.
 * @param {string} path
 * @returns {Promise<any>}
 */
async function getJson (path) {
  return (await session.fetch(path)).json()
}

/**
 * @param {string} endpoint
 * @param {Record<string, string | number | null | undefined>} params
 */
function apiPath (endpoint, params) {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== null && value !== undefined && value !== '') query.set(name, String(value))
  return `${endpoint}?${query}`
}

const iso = (/** @type {number} */ ms) => new Date(ms).toISOString()

/** The window the address shows, as of now (a preset's end moves with the clock); null when it has none. */
function currentWindow () {
  const w = windowOf(state, Date.now())
  return 'error' in w ? null : w
}

// ---- The address --------------------------------------------------------------------------------

/**
 * Changes the state and the address (a new history entry when `push`), then shows it.
 * @param {Partial<State>} patch
 * @param {boolean} push
 */
function navigate (patch, push) {
  state = { ...state, ...patch }
  const search = writeState(state)
  if (search !== location.search) history[push ? 'pushState' : 'replaceState'](null, '', search)
  void render()
}

/**
 * The address of a view of this guild, window and zone (its own table settings start afresh).
 * @param {Partial<State>} patch
 */
function hrefOf (patch) {
  return `/dashboard${writeState({ ...state, sort: '', dir: 'desc', q: '', page: 1, min: null, member: '', types: [], channel: '', ...patch })}`
}

/**
 * Follows a link within the page without loading it again (a click with a modifier opens it as usual).
 * @param {MouseEvent} event
 */
function follow (event) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  const link = /** @type {HTMLAnchorElement} */ (event.currentTarget)
  event.preventDefault()
  history.pushState(null, '', link.href)
  state = readState(location.search)
  void render().then(() => viewBox.querySelector('h2')?.focus())
}

window.addEventListener('popstate', () => {
  state = readState(location.search)
  void render()
})

// ---- Controls -----------------------------------------------------------------------------------

async function loadGuilds () {
  const error = byId('guild-error')
  error.hidden = true
  try {
    const answer = await getJson(`/api/guilds?limit=${TABLE_LIMIT}`)
    guilds = /** @type {Guild[]} */ (answer.guilds)
  } catch (err) {
    if (!signedIn) return
    fill(error, `The guild list could not be read: ${describe(err)}`)
    error.hidden = false
    return
  }
  await render()
}

function fillGuilds () {
  const list = guilds ?? []
  const options = list.map((g) => h('option', { value: g.guildId }, `${g.name ?? g.guildId} (${formats(state.tz).count(g.events)} events)`))
  // A guild named by a link but not in the list: shown, and the API says whether it may be read.
  if (state.guild && !list.some((g) => g.guildId === state.guild)) options.push(h('option', { value: state.guild }, `${state.guild} (not in your guild list)`))
  fill(guildSelect, options)
  guildSelect.value = state.guild
}

function fillZones () {
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : []
  if (!zones.includes('UTC')) zones.unshift('UTC')
  if (!zones.includes(state.tz)) zones.unshift(state.tz)
  fill(tzSelect, zones.map((zone) => h('option', { value: zone }, zone.replace(/_/g, ' '))))
}

function syncControls () {
  fillGuilds()
  if (tzSelect.options.length === 0) fillZones()
  if (!Array.from(tzSelect.options).some((o) => o.value === state.tz)) tzSelect.prepend(h('option', { value: state.tz }, state.tz))
  tzSelect.value = state.tz
  rangeSelect.value = state.range
  byId('custom').hidden = state.range !== 'custom'
  if (state.range === 'custom') {
    fromInput.value = state.from
    toInput.value = state.to
  }
}

guildSelect.addEventListener('change', () => {
  const guild = guildSelect.value
  navigate({ guild, view: state.view === 'member' ? 'overview' : state.view, member: '', types: [], channel: '', page: 1, q: '' }, true)
})
rangeSelect.addEventListener('change', () => {
  const range = rangeSelect.value
  if (range !== 'custom') return navigate({ range, from: '', to: '', page: 1 }, true)
  // A custom window starts as the preset it replaces, in whole local dates.
  const now = Date.now()
  const span = PRESETS[/** @type {keyof typeof PRESETS} */ (state.range)] ?? PRESETS['7d']
  navigate({ range, from: localDate(now - span, state.tz), to: localDate(now, state.tz), page: 1 }, true)
})
byId('controls').addEventListener('submit', (event) => {
  event.preventDefault()
  if (state.range === 'custom' && fromInput.value && toInput.value) navigate({ from: fromInput.value, to: toInput.value, page: 1 }, true)
})
tzSelect.addEventListener('change', () => navigate({ tz: tzSelect.value }, true))
byId('sign-in').addEventListener('click', () => session.signIn())
byId('sign-out').addEventListener('click', () => { session.signOut().catch(showAccountError) })
byId('sign-out-everywhere').addEventListener('click', () => { session.signOutEverywhere().catch(showAccountError) })

/** @param {unknown} err */
function showAccountError (err) {
  fill(byId('connection'), describe(err))
  byId('connection').dataset.state = 'error'
}

// ---- Online, offline, live ----------------------------------------------------------------------

function showOnline () {
  const connection = byId('connection')
  connection.dataset.state = online ? 'online' : 'offline'
  connection.textContent = online ? '' : 'Offline: what is shown may be out of date; it is refreshed when the connection returns.'
  showLive()
}

window.addEventListener('offline', () => {
  online = false
  showOnline()
})
window.addEventListener('online', () => {
  online = true
  showOnline()
  live.resume()
  void render(true)
})

function showLive () {
  const indicator = byId('live')
  const shown = !windowIsLive ? 'paused' : !online ? 'offline' : liveState
  indicator.dataset.state = shown
  indicator.textContent = {
    paused: 'Not live: the window ends in the past',
    offline: 'Not live: offline',
    off: 'Not live',
    connecting: 'Connecting…',
    live: 'Live',
    retrying: 'Reconnecting…',
    refused: `Not live: ${liveDetail}`
  }[shown] ?? ''
}

function stamp () {
  const updated = byId('updated')
  const now = new Date()
  updated.dataset.at = now.toISOString()
  updated.textContent = `Updated at ${now.toLocaleTimeString(undefined, { timeZone: state.tz })}`
}

// A change of colour scheme redraws the charts in the new colours.
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => current?.redraw(state))

// ---- Showing the state --------------------------------------------------------------------------

/** What a view's answers depend on: a change of anything else is drawn from the answers it holds. */
const viewKey = (/** @type {State} */ s) => [s.guild, s.range, s.from, s.to, s.tz, s.view, s.member].join('|')

/**
 * Shows the state: the controls, the window, the view (its answers read again when `refresh`, or when
 * what they depend on changed).
 * @param {boolean} [refresh]
 */
async function render (refresh = false) {
  if (!signedIn || guilds === null) return
  const noGuild = guilds.length === 0 && !state.guild
  byId('no-guild').hidden = !noGuild
  byId('guild-view').hidden = noGuild
  byId('controls').hidden = noGuild
  if (noGuild) {
    live.follow(null)
    return
  }
  if (!state.guild) state.guild = guilds[0].guildId
  // The address always says everything (the guild and zone chosen by default included).
  const search = writeState(state)
  if (search !== location.search) history.replaceState(null, '', search)
  syncControls()
  showTabs()

  const w = windowOf(state, Date.now())
  const label = byId('window-label')
  if ('error' in w) {
    fill(label, h('span', { class: 'error', role: 'alert' }, w.error))
    windowIsLive = false
    live.follow(null)
    showLive()
    current?.close?.()
    current = null
    viewBox.replaceChildren()
    return
  }
  const f = formats(state.tz)
  fill(label, `${RANGE_LABELS[/** @type {keyof typeof RANGE_LABELS} */ (state.range)]}: ${f.date(w.since)} – ${f.date(w.until)} (${state.tz.replace(/_/g, ' ')})`)
  windowIsLive = w.live
  live.follow(w.live ? state.guild : null)
  showLive()

  const key = viewKey(state)
  if (current && current.key === key) {
    if (!refresh) return current.redraw(state)
  } else {
    current?.close?.()
    current = makeView(state)
    fill(viewBox, current.element)
    current.redraw(state)
  }
  await current.load(w)
}

function showTabs () {
  const views = VIEWS.filter((v) => v !== 'member' || state.view === 'member')
  fill(byId('views'), h('ul', {}, views.map((v) => {
    const link = h('a', { href: v === 'member' ? `/dashboard${writeState(state)}` : hrefOf({ view: v }), 'aria-current': v === state.view ? 'page' : null }, VIEW_LABELS[v])
    link.addEventListener('click', follow)
    return h('li', {}, link)
  })))
}

/** @param {State} s */
function makeView (s) {
  if (s.view === 'overview') return overviewView(s)
  if (s.view === 'heatmap') return heatmapView(s)
  if (s.view === 'member') return memberView(s)
  return tableView(s)
}

/**
 * Whether a view's element is the one on the page (an answer for a view left meanwhile is dropped).
 * @param {HTMLElement} element
 */
const isShown = (element) => current?.element === element

/**
 * A section's heading, which takes the focus when its view is opened.
 * @param {string} text
 */
const heading = (text) => h('h2', { tabindex: -1 }, text)

/**
 * Runs a view's loads and keeps the newest: an answer that arrives after a later load began is dropped.
 * @returns {(load: () => Promise<void>) => Promise<boolean>} resolves to whether this load was the newest
 */
function latestOnly () {
  let generation = 0
  return async (load) => {
    const mine = ++generation
    await load()
    return mine === generation
  }
}

// ---- Overview -----------------------------------------------------------------------------------

/**
 * @param {State} s
 * @returns {ViewPart}
 */
function overviewView (s) {
  const cards = h('dl', { class: 'cards' })
  const chart = h('div', { class: 'chart-slot' }, h('p', { class: 'loading' }, 'Loading…'))
  const channels = h('div', { class: 'channels-slot' })
  const element = h('section', { class: 'overview', 'aria-labelledby': 'overview-title' },
    h('h2', { id: 'overview-title', tabindex: -1 }, 'Overview'),
    cards,
    h('section', { 'aria-labelledby': 'days-title' }, h('h3', { id: 'days-title' }, 'Events per day'), chart),
    h('section', { 'aria-labelledby': 'channels-title' }, h('h3', { id: 'channels-title' }, 'Top channels'), channels))
  /** @type {import('./charts.js').BarChart | null} */
  let drawn = null
  /** @type {any} */
  let overview = null
  const newest = latestOnly()
  const f = formats(s.tz)

  /**
   * @param {string} key
   * @param {string} label
   * @param {string} source
   * @param {number | unknown} value a count, or the error that kept it from being read
   * @param {{ href?: string, capped?: boolean }} [options]
   */
  const card = (key, label, source, value, options = {}) => {
    const shown = typeof value === 'number'
      ? h('dd', { class: 'value' }, `${f.count(value)}${options.capped ? '+' : ''}`)
      : h('dd', { class: 'card-error' }, errorBox(value))
    const term = options.href ? h('a', { href: options.href }, label) : label
    if (term instanceof HTMLAnchorElement) term.addEventListener('click', follow)
    return h('div', { class: 'card', 'data-key': key, 'data-source': source, 'data-value': typeof value === 'number' ? value : null }, h('dt', {}, term), shown)
  }

  const drawChart = () => {
    drawn?.destroy()
    drawn = null
    if (!overview) return
    const { element: figure, draw } = dailyChart(overview.days, f.count)
    fill(chart, figure)
    try {
      drawn = draw()
    } catch (err) {
      chart.prepend(errorBox(err))
    }
  }

  return {
    key: viewKey(s),
    element,
    redraw: () => drawChart(),
    close: () => drawn?.destroy(),
    async load (w) {
      const window = { guildId: s.guild, since: iso(w.since), until: iso(w.until) }
      const sources = {
        overview: apiPath('/api/overview', { ...window, timeZone: s.tz, limit: OVERVIEW_CHANNELS }),
        ghosts: apiPath('/api/ghosts', { ...window, limit: TABLE_LIMIT }),
        lurkers: apiPath('/api/lurkers', { ...window, limit: TABLE_LIMIT }),
        suspicion: apiPath('/api/suspicion', { ...window, minScore: 50, limit: TABLE_LIMIT })
      }
      /** @type {Record<keyof typeof sources, PromiseSettledResult<any>>} */
      let answers = /** @type {any} */ ({})
      const fresh = await newest(async () => {
        const names = /** @type {Array<keyof typeof sources>} */ (Object.keys(sources))
        const settled = await Promise.allSettled(names.map((name) => getJson(sources[name])))
        answers = /** @type {any} */ (Object.fromEntries(names.map((name, i) => [name, settled[i]])))
      })
      if (!fresh || !isShown(element)) return
      const value = (/** @type {PromiseSettledResult<any>} */ r, /** @type {(a: any) => number} */ pick) => (r.status === 'fulfilled' ? pick(r.value) : r.reason)
      const o = answers.overview
      fill(cards,
        card('events', 'Events', sources.overview, value(o, (a) => a.totals.events)),
        card('members', 'Active members', sources.overview, value(o, (a) => a.totals.members)),
        card('ghosts', 'Ghosts', sources.ghosts, value(answers.ghosts, (a) => a.count), { href: hrefOf({ view: 'ghosts' }), capped: answers.ghosts.status === 'fulfilled' && answers.ghosts.value.count === TABLE_LIMIT }),
        card('lurkers', 'Lurkers', sources.lurkers, value(answers.lurkers, (a) => a.count), { href: hrefOf({ view: 'lurkers' }), capped: answers.lurkers.status === 'fulfilled' && answers.lurkers.value.count === TABLE_LIMIT }),
        card('suspicious', 'Suspicion score ≥ 50', sources.suspicion, value(answers.suspicion, (a) => a.members.length), { href: hrefOf({ view: 'suspicion', min: 50 }), capped: answers.suspicion.status === 'fulfilled' && answers.suspicion.value.members.length === TABLE_LIMIT }))
      if (o.status === 'rejected') {
        overview = null
        drawn?.destroy()
        drawn = null
        fill(chart, errorBox(o.reason))
        fill(channels, errorBox(o.reason))
        return
      }
      overview = o.value
      drawChart()
      fill(channels, channelTable(overview.channels, sources.overview))
      stamp()
    }
  }

  /**
   * @param {Array<{ channelId: string, messages: number, typing: number, reactions: number }>} list
   * @param {string} source
   */
  function channelTable (list, source) {
    if (list.length === 0) return h('p', {}, 'No messages, typing or reactions in this window.')
    return h('div', { class: 'table-scroll' }, h('table', { class: 'channels', 'data-source': source },
      h('caption', {}, `The ${list.length} channels with the most messages, typing and reactions`),
      h('thead', {}, h('tr', {}, ['Channel', 'Messages', 'Typing', 'Reactions', 'Total'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, list.map((c) => {
        const link = h('a', { href: hrefOf({ view: 'heatmap', channel: c.channelId }) }, c.channelId)
        link.addEventListener('click', follow)
        return h('tr', { 'data-channel': c.channelId },
          h('th', { scope: 'row' }, link),
          [c.messages, c.typing, c.reactions, c.messages + c.typing + c.reactions].map((n) => h('td', { class: 'num' }, f.count(n))))
      }))))
  }
}

// ---- Heatmap ------------------------------------------------------------------------------------

/**
 * @param {State} s
 * @returns {ViewPart}
 */
function heatmapView (s) {
  const channelSelect = h('select', { id: 'channel' })
  const body = h('div', { class: 'heatmap-slot' }, h('p', { class: 'loading' }, 'Loading…'))
  const element = h('section', { class: 'heatmap-view', 'aria-labelledby': 'heatmap-title' },
    h('h2', { id: 'heatmap-title', tabindex: -1 }, 'Heatmap'),
    h('p', { class: 'explain' }, `Messages and typing per hour of the week, in ${s.tz.replace(/_/g, ' ')} time.`),
    h('label', {}, 'Channel ', channelSelect),
    body)
  channelSelect.addEventListener('change', () => navigate({ channel: channelSelect.value }, true))
  /** @type {any} */
  let answer = null
  let source = ''
  /** @type {unknown} */
  let failure = null
  const newest = latestOnly()
  const f = formats(s.tz)

  const draw = (/** @type {State} */ now) => {
    if (failure) return fill(body, errorBox(failure))
    if (!answer) return
    /** @type {Array<{ channelId: string, messages: number, typing: number }>} */
    const channels = answer.channels
    const all = channels.length === HEATMAP_CHANNELS ? `All channels (the ${HEATMAP_CHANNELS} busiest)` : 'All channels'
    const options = [h('option', { value: '' }, all), ...channels.map((c) => h('option', { value: c.channelId }, `${c.channelId} (${f.count(c.messages + c.typing)})`))]
    if (now.channel && !channels.some((c) => c.channelId === now.channel)) options.push(h('option', { value: now.channel }, `${now.channel} (none in this window)`))
    fill(channelSelect, options)
    channelSelect.value = now.channel
    const cells = now.channel ? answer.cells.filter((/** @type {{ channelId: string }} */ c) => c.channelId === now.channel) : answer.cells
    const caption = `${now.channel ? `Channel ${now.channel}` : all}: messages + typing by day of the week and hour (${s.tz.replace(/_/g, ' ')})`
    const grid = heatmapGrid(cells, f.count, caption)
    grid.dataset.source = source
    grid.dataset.channel = now.channel
    fill(body, grid)
  }

  return {
    key: viewKey(s),
    element,
    redraw: draw,
    async load (w) {
      const path = apiPath('/api/heatmap', { guildId: s.guild, since: iso(w.since), until: iso(w.until), timeZone: s.tz, limit: HEATMAP_CHANNELS })
      /** @type {any} */
      let got = null
      /** @type {unknown} */
      let err = null
      if (!await newest(async () => { try { got = await getJson(path) } catch (e) { err = e } }) || !isShown(element)) return
      answer = got
      failure = err
      source = path
      draw(state)
      if (!err) stamp()
    }
  }
}

// ---- Member tables ------------------------------------------------------------------------------

/**
 * @param {State} s
 * @returns {ViewPart}
 */
function tableView (s) {
  const def = TABLES[s.view]
  const table = new MemberTable(def, {
    change: (patch, push) => navigate(patch, push),
    memberHref: (userId) => hrefOf({ view: 'member', member: userId }),
    follow
  })
  const status = h('div', { class: 'table-status' }, h('p', { class: 'loading' }, 'Loading…'))
  const summary = h('div', { class: 'clients-summary' })
  const tableBox = h('div', { class: 'table-box' })
  const element = h('section', { class: `table-view view-${s.view}`, 'aria-labelledby': 'table-title' },
    h('h2', { id: 'table-title', tabindex: -1 }, def.title),
    s.view === 'clients' ? summary : null,
    status,
    tableBox)
  table.mount(tableBox)
  tableBox.hidden = true
  /** @type {any[] | null} */
  let rows = null
  let loadedMin = s.min
  let capped = false
  let lastWindow = /** @type {Window | null} */ (null)
  const newest = latestOnly()
  const f = formats(s.tz)

  const draw = (/** @type {State} */ now) => {
    const w = now.min !== loadedMin && lastWindow ? currentWindow() : null
    if (w) {
      loadedMin = now.min
      void load(w)
      return
    }
    if (!rows) return
    const name = `${s.guild}-${s.view}-${localDate(lastWindow?.since ?? Date.now(), s.tz)}-${localDate((lastWindow?.until ?? Date.now()) - 1, s.tz)}.csv`
    table.update(rows, now, f, { capped, filename: name })
  }

  /** @param {Window} w */
  async function load (w) {
    lastWindow = w
    const window = { guildId: s.guild, since: iso(w.since), until: iso(w.until) }
    const threshold = def.threshold && loadedMin !== null ? { [def.threshold.param]: loadedMin } : {}
    const path = apiPath(def.endpoint, { ...window, ...threshold, limit: TABLE_LIMIT })
    /** @type {any} */
    let answer = null
    /** @type {unknown} */
    let failure = null
    if (!await newest(async () => { try { answer = await getJson(path) } catch (e) { failure = e } }) || !isShown(element)) return
    element.dataset.source = path
    if (failure) {
      fill(status, errorBox(failure))
      return
    }
    status.replaceChildren()
    rows = answer[def.rowsKey]
    capped = (rows?.length ?? 0) === TABLE_LIMIT
    tableBox.hidden = false
    if (s.view === 'clients') fill(summary, clientsSummary(answer.clients, f))
    draw(state)
    stamp()
  }

  return { key: viewKey(s), element, redraw: draw, load }
}

/**
 * Members per kind of device in this window and the one before.
 * @param {Array<{ client: string, users: number, previousUsers: number }>} clients
 * @param {Formats} f
 */
function clientsSummary (clients, f) {
  return h('div', { class: 'table-scroll' }, h('table', { class: 'clients' },
    h('caption', {}, 'Members seen on each kind of device: this window against the previous one of the same length'),
    h('thead', {}, h('tr', {}, ['Client', 'This window', 'Previous window', 'Change'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, clients.map((c) => h('tr', { 'data-client': c.client },
      h('th', { scope: 'row' }, c.client),
      h('td', { class: 'num' }, f.count(c.users)),
      h('td', { class: 'num' }, f.count(c.previousUsers)),
      h('td', { class: 'num' }, f.percent((c.users - c.previousUsers) / Math.max(c.previousUsers, 1))))))))
}

// ---- Member -------------------------------------------------------------------------------------

/**
 * @param {State} s
 * @returns {ViewPart}
 */
function memberView (s) {
  const f = formats(s.tz)
  const title = heading(`Member ${s.member}`)
  const factors = h('div', { class: 'member-factors' }, h('p', { class: 'loading' }, 'Loading…'))
  const filters = h('fieldset', { class: 'type-filter' }, h('legend', {}, 'Event types (none checked: all)'),
    TYPES.map((type) => {
      const box = h('input', { type: 'checkbox', value: type, id: `type-${type}` })
      box.addEventListener('change', () => {
        const types = TYPES.filter((t) => /** @type {HTMLInputElement} */ (document.getElementById(`type-${t}`)).checked)
        navigate({ types }, true)
      })
      return h('label', { class: `type-choice type-${type}` }, box, ` ${TYPE_LABELS[type]}`)
    }))
  const list = h('ol', { class: 'timeline', 'aria-label': 'Events, newest first' })
  const timelineStatus = h('p', { class: 'timeline-status', 'aria-live': 'polite' })
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Load older events')
  const sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' })
  const element = h('section', { class: 'member-view', 'aria-labelledby': 'member-title' },
    title,
    h('section', { 'aria-labelledby': 'factors-title' }, h('h3', { id: 'factors-title' }, 'Suspicion'), factors),
    h('section', { 'aria-labelledby': 'events-title' }, h('h3', { id: 'events-title' }, 'Events'), filters, list, timelineStatus, more, sentinel))
  title.id = 'member-title'

  /** @type {string[]} */
  let loadedTypes = []
  /** @type {Record<string, string> | null} the first page's query: later pages repeat it with the cursor */
  let query = null
  /** @type {string | null} */
  let cursor = null
  let loading = false
  let shownCount = 0
  /** @type {Set<string>} */
  const seen = new Set()
  let lastWindow = /** @type {Window | null} */ (null)
  const newest = latestOnly()
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) void loadMore()
  })
  observer.observe(sentinel)
  more.addEventListener('click', () => { void loadMore() })

  /** @param {Record<string, any>} event */
  const describeEvent = (event) => {
    switch (event.type) {
      case 'reaction': return `in ${event.channelId}${typeof event.latencyMs === 'number' ? `, ${f.count(event.latencyMs)} ms after the message` : ''}`
      case 'presence': return `${event.status}${event.clients?.length ? ` on ${event.clients.join(', ')}` : ''}`
      case 'role_change': return `role ${event.roleId} ${event.change}`
      default: return event.channelId ? `in ${event.channelId}` : ''
    }
  }
  /** @param {Record<string, any>} event */
  const eventItem = (event) => h('li', { class: `event type-${event.type}`, 'data-type': event.type, 'data-created-at': event.createdAt },
    h('time', { datetime: event.createdAt }, f.date(event.createdAt)),
    h('span', { class: 'type-badge' }, EVENT_LABELS[/** @type {keyof typeof EVENT_LABELS} */ (event.type)] ?? event.type),
    h('span', { class: 'event-detail' }, describeEvent(event)))

  const showTimelineStatus = () => {
    timelineStatus.textContent = shownCount === 0 ? 'No events of this member in this window.' : cursor ? `${f.count(shownCount)} events shown; older ones load as you scroll.` : `All ${f.count(shownCount)} events of this window shown.`
    more.hidden = !cursor
    list.dataset.count = String(shownCount)
  }

  /** @param {Record<string, string>} params */
  const timelinePath = (params) => apiPath(`/api/members/${encodeURIComponent(s.member)}/activity`, params)

  async function loadMore () {
    if (!cursor || !query || loading) return
    loading = true
    try {
      const answer = await getJson(timelinePath({ ...query, cursor }))
      for (const event of answer.events) {
        seen.add(JSON.stringify(event))
        list.append(eventItem(event))
      }
      shownCount += answer.events.length
      cursor = answer.nextCursor
      showTimelineStatus()
    } catch (err) {
      timelineStatus.replaceChildren(errorBox(err))
    } finally {
      loading = false
    }
    // Still in view (a tall screen): the observer only tells of changes, so ask it again.
    observer.unobserve(sentinel)
    observer.observe(sentinel)
  }

  /**
   * The first page: anew, or (a live refresh of the same filter) only the events newer than those shown.
   * @param {Window} w
   * @param {boolean} prepend
   */
  async function loadEvents (w, prepend) {
    const params = { guildId: s.guild, since: iso(w.since), until: iso(w.until), limit: String(TIMELINE_PAGE), ...(loadedTypes.length ? { types: loadedTypes.join(',') } : {}) }
    const path = timelinePath(params)
    /** @type {any} */
    let answer = null
    /** @type {unknown} */
    let failure = null
    if (!await newest(async () => { try { answer = await getJson(path) } catch (e) { failure = e } }) || !isShown(element)) return
    if (failure) {
      fill(timelineStatus, errorBox(failure))
      return
    }
    /** @type {Array<Record<string, any>>} */
    const events = answer.events
    const fresh = events.filter((e) => !seen.has(JSON.stringify(e)))
    if (prepend && fresh.length < events.length) {
      list.prepend(...fresh.map(eventItem))
      for (const e of fresh) seen.add(JSON.stringify(e))
      shownCount += fresh.length
    } else {
      seen.clear()
      for (const e of events) seen.add(JSON.stringify(e))
      list.dataset.source = path
      fill(list, events.map(eventItem))
      query = params
      cursor = answer.nextCursor
      shownCount = events.length
    }
    showTimelineStatus()
    stamp()
    observer.unobserve(sentinel)
    observer.observe(sentinel)
  }

  /** @param {Window} w */
  async function loadFactors (w) {
    // This member alone (minScore 0: a member with an event in the window always has an entry).
    const path = apiPath('/api/suspicion', { guildId: s.guild, since: iso(w.since), until: iso(w.until), minScore: 0, userId: s.member })
    try {
      const answer = await getJson(path)
      const entry = answer.members.find((/** @type {{ userId: string }} */ m) => m.userId === s.member)
      factors.dataset.source = path
      if (entry) {
        title.textContent = `Member ${entry.username}`
        fill(factors, h('p', { class: 'score', 'data-score': entry.score }, 'Score ', h('strong', {}, f.count(entry.score)), ' of 100'), factorList(entry.factors, f))
      } else {
        fill(factors, h('p', {}, 'No events of this member in this window: no score.'))
      }
    } catch (err) {
      fill(factors, errorBox(err))
    }
  }

  const redraw = (/** @type {State} */ now) => {
    for (const type of TYPES) /** @type {HTMLInputElement} */ (filters.querySelector(`#type-${type}`)).checked = now.types.includes(type)
    const w = now.types.join(',') !== loadedTypes.join(',') && lastWindow ? currentWindow() : null
    if (w) {
      loadedTypes = now.types
      void loadEvents(w, false)
    }
  }
  loadedTypes = s.types

  return {
    key: viewKey(s),
    element,
    redraw,
    close: () => observer.disconnect(),
    async load (w) {
      const again = lastWindow !== null
      lastWindow = w
      await Promise.all([loadFactors(w), loadEvents(w, again)])
    }
  }
}

// ---- Start --------------------------------------------------------------------------------------

showOnline()
session.start().catch((err) => {
  byId('checking').textContent = `The session could not be checked: ${describe(err)}`
})
