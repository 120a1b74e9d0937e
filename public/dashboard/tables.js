/*
 * The member tables (ghosts, lurkers, suspicion, shifts, role drift, new clients): each sorted by a
 * column, searched by name and shown a page at a time, all in the page's address; the rows shown export
 * as CSV exactly as they read.
 */
import { h, fill } from './dom.js'
import { download, toCsv } from './csv.js'

export const PAGE_SIZE = 25
export const FACTORS = /** @type {const} */ (['ghost', 'multiClient', 'deletes', 'roleChurn', 'fastReactions', 'newcomer'])
const FACTOR_LABELS = { ghost: 'Ghost', multiClient: 'Multi-client', deletes: 'Deletes', roleChurn: 'Role churn', fastReactions: 'Fast reactions', newcomer: 'Newcomer' }

/**
 * @typedef {Record<string, any>} Row a member entry of an API answer
 * @typedef {'member' | 'count' | 'ratio' | 'percent' | 'date' | 'text' | 'factors'} Kind
 * @typedef {{ key: string, label: string, kind: Kind, sortDefault?: 'asc' | 'desc' }} Column
 * @typedef {{ param: string, label: string, min: number, max: number, fallback: number }} Threshold
 * @typedef {object} TableDef
 * @property {string} title
 * @property {string} endpoint
 * @property {string} rowsKey the answer's list
 * @property {string} noun what a row is, plural
 * @property {string} explain one sentence: what the table lists
 * @property {Column[]} columns
 * @property {Threshold} [threshold]
 */

/** @type {Record<string, TableDef>} */
export const TABLES = {
  ghosts: {
    title: 'Ghosts',
    endpoint: '/api/ghosts',
    rowsKey: 'ghosts',
    noun: 'ghosts',
    explain: 'Members who type without posting: typing events over messages + 1, in the window.',
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'ghostScore', label: 'Ghost score', kind: 'ratio' },
      { key: 'typingCount', label: 'Typing', kind: 'count' },
      { key: 'messageCount', label: 'Messages', kind: 'count' }
    ]
  },
  lurkers: {
    title: 'Lurkers',
    endpoint: '/api/lurkers',
    rowsKey: 'lurkers',
    noun: 'lurkers',
    explain: 'Members who were present but never posted, typed or reacted in the window.',
    threshold: { param: 'minPresence', label: 'At least this many presence events', min: 1, max: 1000, fallback: 5 },
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'presenceCount', label: 'Presence events', kind: 'count' },
      { key: 'lastPresenceAt', label: 'Last seen', kind: 'date' }
    ]
  },
  suspicion: {
    title: 'Suspicion',
    endpoint: '/api/suspicion',
    rowsKey: 'members',
    noun: 'members',
    explain: 'A score from 0 to 100 made of six weighted factors, each from 0 to 1, over the window.',
    threshold: { param: 'minScore', label: 'Score at least', min: 0, max: 100, fallback: 1 },
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'score', label: 'Score', kind: 'count' },
      { key: 'factors', label: 'Factors', kind: 'factors' }
    ]
  },
  shifts: {
    title: 'Behaviour shifts',
    endpoint: '/api/shifts',
    rowsKey: 'members',
    noun: 'members',
    explain: 'Messages and typing in the window against the window of the same length just before it.',
    threshold: { param: 'minEvents', label: 'At least this many events in both windows', min: 1, max: 100000, fallback: 10 },
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'current', label: 'This window', kind: 'count' },
      { key: 'previous', label: 'Previous window', kind: 'count' },
      { key: 'change', label: 'Change', kind: 'percent' },
      { key: 'direction', label: 'Direction', kind: 'text' }
    ]
  },
  roles: {
    title: 'Role drift',
    endpoint: '/api/roles',
    rowsKey: 'members',
    noun: 'members',
    explain: 'Members whose roles changed in the window; two changes or more is drift.',
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'changes', label: 'Changes', kind: 'count' },
      { key: 'added', label: 'Added', kind: 'count' },
      { key: 'removed', label: 'Removed', kind: 'count' },
      { key: 'drift', label: 'Drift', kind: 'text' }
    ]
  },
  clients: {
    title: 'Clients',
    endpoint: '/api/clients',
    rowsKey: 'newClients',
    noun: 'members on a new kind of device',
    explain: 'Known members seen on a kind of device they had never used before, in the window.',
    columns: [
      { key: 'username', label: 'Member', kind: 'member' },
      { key: 'client', label: 'New client', kind: 'text' },
      { key: 'firstSeenAt', label: 'First seen', kind: 'date' }
    ]
  }
}

/**
 * How numbers and dates read on the page.
 * @param {string} tz
 */
export function formats (tz) {
  const count = new Intl.NumberFormat(undefined)
  const ratio = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 })
  const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1, signDisplay: 'exceptZero' })
  const date = new Intl.DateTimeFormat(undefined, { timeZone: tz, dateStyle: 'medium', timeStyle: 'short' })
  return {
    count: (/** @type {number} */ n) => count.format(n),
    ratio: (/** @type {number} */ n) => ratio.format(n),
    percent: (/** @type {number} */ n) => percent.format(n),
    date: (/** @type {string | number} */ d) => date.format(new Date(d))
  }
}

/** @typedef {ReturnType<typeof formats>} Formats */

/**
 * A column's cells in CSV: a member is their name and id, the factors are six numbers.
 * @param {Column} column
 */
function csvHeaders (column) {
  if (column.kind === 'member') return [column.label, 'User id']
  if (column.kind === 'factors') return FACTORS.map((f) => FACTOR_LABELS[f])
  return [column.label]
}

/**
 * @param {Column} column
 * @param {Row} row
 * @param {Formats} f
 * @returns {string[]}
 */
function cellTexts (column, row, f) {
  const value = row[column.key]
  switch (column.kind) {
    case 'member': return [String(value), String(row.userId)]
    case 'count': return [f.count(value)]
    case 'ratio': return [f.ratio(value)]
    case 'percent': return [f.percent(value)]
    case 'date': return [value === null ? '' : f.date(value)]
    case 'factors': return FACTORS.map((name) => f.ratio(value[name]))
    default: return [typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value)]
  }
}

/**
 * @param {Column} column
 * @param {Row} row
 * @returns {string | number}
 */
function sortValue (column, row) {
  const value = row[column.key]
  if (column.kind === 'date') return value === null ? -Infinity : Date.parse(value)
  if (typeof value === 'boolean') return value ? 1 : 0
  if (column.kind === 'member') return String(value).toLowerCase()
  return value
}

// Ties fall back to the user id compared code unit by code unit, as the API breaks them.
const byUserId = (/** @type {Row} */ a, /** @type {Row} */ b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0)

/**
 * The rows a table shows: searched by name, sorted, and cut to its page.
 * @param {TableDef} def
 * @param {Row[]} rows
 * @param {{ q: string, sort: string, dir: 'asc' | 'desc', page: number }} view
 */
export function visibleRows (def, rows, view) {
  const needle = view.q.toLowerCase()
  let kept = needle ? rows.filter((row) => String(row.username).toLowerCase().includes(needle)) : rows.slice()
  const column = def.columns.find((c) => c.key === view.sort && c.kind !== 'factors')
  if (column) {
    const sign = view.dir === 'asc' ? 1 : -1
    kept = kept.sort((a, b) => {
      const x = sortValue(column, a)
      const y = sortValue(column, b)
      return (x < y ? -sign : x > y ? sign : 0) || byUserId(a, b)
    })
  }
  const pages = Math.max(1, Math.ceil(kept.length / PAGE_SIZE))
  const page = Math.min(view.page, pages)
  return { matching: kept.length, pages, page, rows: kept.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE) }
}

/**
 * @typedef {object} TableHandlers
 * @property {(patch: { q?: string, sort?: string, dir?: 'asc' | 'desc', page?: number, min?: number | null }, push: boolean) => void} change
 * @property {(userId: string) => string} memberHref
 * @property {(event: MouseEvent) => void} follow follows a link within the page
 */

/** One member table on the page: its controls stay while its rows change. */
export class MemberTable {
  #def
  #handlers
  #search = h('input', { type: 'search', maxlength: 100, autocomplete: 'off', placeholder: 'name' })
  #threshold = h('input', { type: 'number', inputmode: 'numeric' })
  #summary = h('p', { class: 'table-summary', 'aria-live': 'polite' })
  #table = h('table', { class: 'members' })
  #pager = h('nav', { class: 'pager', 'aria-label': 'Pages' })
  /** @type {string[][]} */
  #shown = []
  #filename = 'table.csv'
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #typing

  /**
   * @param {TableDef} def
   * @param {TableHandlers} handlers
   */
  constructor (def, handlers) {
    this.#def = def
    this.#handlers = handlers
  }

  /** The table's controls and its (empty) table, in this element. */
  mount (/** @type {HTMLElement} */ container) {
    const def = this.#def
    this.#search.addEventListener('input', () => {
      clearTimeout(this.#typing)
      this.#typing = setTimeout(() => this.#handlers.change({ q: this.#search.value.trim(), page: 1 }, false), 200)
    })
    const controls = h('div', { class: 'table-controls' },
      h('label', {}, 'Search by name ', this.#search))
    if (def.threshold) {
      const t = def.threshold
      this.#threshold.min = String(t.min)
      this.#threshold.max = String(t.max)
      this.#threshold.addEventListener('change', () => {
        const n = Number(this.#threshold.value)
        if (this.#threshold.value === '' || !Number.isInteger(n) || n < t.min || n > t.max) {
          this.#threshold.setCustomValidity(`A whole number from ${t.min} to ${t.max}`)
          this.#threshold.reportValidity()
          return
        }
        this.#threshold.setCustomValidity('')
        this.#handlers.change({ min: n === t.fallback ? null : n, page: 1 }, true)
      })
      controls.append(h('label', {}, `${t.label} `, this.#threshold))
    }
    const csv = h('button', { type: 'button', class: 'csv' }, 'Download CSV')
    csv.addEventListener('click', () => download(this.#filename, toCsv(this.#shown)))
    controls.append(csv)
    container.append(h('p', { class: 'explain' }, def.explain), controls, this.#summary, h('div', { class: 'table-scroll' }, this.#table), this.#pager)
  }

  /**
   * Shows the rows of an answer as the address says.
   * @param {Row[]} rows
   * @param {{ q: string, sort: string, dir: 'asc' | 'desc', page: number, min: number | null }} view
   * @param {Formats} f
   * @param {{ capped: boolean, filename: string }} context capped: the answer holds as many rows as it may (there may be more)
   */
  update (rows, view, f, context) {
    const def = this.#def
    if (document.activeElement !== this.#search) this.#search.value = view.q
    if (def.threshold) this.#threshold.value = String(view.min ?? def.threshold.fallback)
    const shown = visibleRows(def, rows, view)
    this.#filename = context.filename.replace(/\.csv$/, shown.pages > 1 ? `-page${shown.page}.csv` : '.csv')
    const first = (shown.page - 1) * PAGE_SIZE
    const of = view.q ? `${shown.matching} matching “${view.q}” of ${rows.length}` : String(rows.length)
    this.#summary.textContent = shown.matching === 0
      ? (view.q ? `No ${def.noun} match “${view.q}”.` : `No ${def.noun} in this window.`)
      : `${def.title}: ${first + 1}–${first + shown.rows.length} of ${of}${context.capped ? ' (the first the API lists; there may be more)' : ''}.`
    this.#summary.dataset.count = String(rows.length)

    const head = h('tr', {}, def.columns.map((column) => {
      if (column.kind === 'factors') return h('th', { scope: 'col' }, column.label)
      const sorted = view.sort === column.key
      const button = h('button', { type: 'button', class: 'sort' }, column.label, h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, sorted ? (view.dir === 'asc' ? '▲' : '▼') : ''))
      const firstDir = column.kind === 'member' || column.kind === 'text' ? 'asc' : 'desc'
      button.addEventListener('click', () => this.#handlers.change({ sort: column.key, dir: sorted ? (view.dir === 'asc' ? 'desc' : 'asc') : firstDir, page: 1 }, true))
      return h('th', { scope: 'col', 'aria-sort': sorted ? (view.dir === 'asc' ? 'ascending' : 'descending') : null }, button)
    }))
    this.#shown = [def.columns.flatMap(csvHeaders)]
    const body = h('tbody', {}, shown.rows.map((row) => {
      this.#shown.push(def.columns.flatMap((column) => cellTexts(column, row, f)))
      return h('tr', { 'data-user-id': row.userId }, def.columns.map((column) => this.#cell(column, row, f)))
    }))
    fill(this.#table, h('caption', {}, `${def.title}, ${view.sort ? `sorted by ${def.columns.find((c) => c.key === view.sort)?.label.toLowerCase() ?? view.sort} (${view.dir === 'asc' ? 'ascending' : 'descending'})` : 'in the API\'s order'}`), h('thead', {}, head), body)

    const previous = h('button', { type: 'button', disabled: shown.page <= 1 }, 'Previous page')
    const next = h('button', { type: 'button', disabled: shown.page >= shown.pages }, 'Next page')
    previous.addEventListener('click', () => this.#handlers.change({ page: shown.page - 1 }, true))
    next.addEventListener('click', () => this.#handlers.change({ page: shown.page + 1 }, true))
    fill(this.#pager, previous, h('span', { class: 'page-of' }, `Page ${shown.page} of ${shown.pages}`), next)
    this.#pager.hidden = shown.pages <= 1
  }

  /**
   * @param {Column} column
   * @param {Row} row
   * @param {Formats} f
   */
  #cell (column, row, f) {
    const texts = cellTexts(column, row, f)
    if (column.kind === 'member') {
      const link = h('a', { href: this.#handlers.memberHref(row.userId) }, texts[0])
      link.addEventListener('click', this.#handlers.follow)
      return h('th', { scope: 'row', class: 'member' }, link, h('span', { class: 'user-id' }, texts[1]))
    }
    if (column.kind === 'factors') return h('td', { class: 'factors-cell' }, factorList(row.factors, f))
    const numeric = column.kind !== 'text' && column.kind !== 'date'
    return h('td', { class: numeric ? 'num' : column.key === 'direction' ? `direction direction-${row.direction}` : null }, texts[0])
  }
}

/**
 * A member's six suspicion factors as small bars with their values.
 * @param {Record<string, number>} factors
 * @param {Formats} f
 */
export function factorList (factors, f) {
  return h('ul', { class: 'factors' }, FACTORS.map((name) => {
    const value = f.ratio(factors[name])
    return h('li', { 'data-factor': name },
      h('span', { class: 'factor-name' }, FACTOR_LABELS[name]),
      h('meter', { min: 0, max: 1, value: factors[name], 'aria-label': `${FACTOR_LABELS[name]} factor`, 'aria-valuetext': value }),
      h('span', { class: 'factor-value' }, value))
  }))
}
