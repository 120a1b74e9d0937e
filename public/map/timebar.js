/*
 * The time bar: a slider over the dataset's KML time extent, cut into periods, with a histogram of the
 * placemarks in each period (following the folder and search filters). Picking a period filters the map
 * through `datetime`; the leftmost position is every time. Times are written in the dataset's zone, the
 * UTC instant on hover.
 */

/**
 * @typedef {{ start: number, end: number }} Period
 * @typedef {(start: number, step: number, bins: number) => Promise<number[]>} Histogram
 */

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
// Period lengths, shortest first: the first that cuts the extent into at most MAX_PERIODS is used.
const STEPS = [SECOND, 10 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 7 * DAY, 30 * DAY, 91 * DAY, 365 * DAY, 3650 * DAY]
const MAX_PERIODS = 30
const SVG = 'http://www.w3.org/2000/svg'

/**
 * The dataset's extent cut into periods of a round length.
 * @param {number} start
 * @param {number} end
 * @returns {Period[]}
 */
export function periodsOf (start, end) {
  const span = Math.max(end - start, 0)
  const step = STEPS.find((s) => span / s < MAX_PERIODS) ?? STEPS[STEPS.length - 1]
  const first = Math.floor(start / step) * step
  const periods = []
  for (let at = first; at <= end && periods.length < MAX_PERIODS + 1; at += step) periods.push({ start: at, end: at + step })
  return periods
}

/**
 * A period as an OGC `datetime` interval: its first and its last millisecond.
 * @param {Period} period
 */
export const periodDatetime = (period) => `${new Date(period.start).toISOString()}/${new Date(period.end - 1).toISOString()}`

/**
 * Formatting in a time zone (an IANA name the browser knows; UTC otherwise).
 * @param {string} zone
 */
export function timeFormats (zone) {
  let timeZone = 'UTC'
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone }).format(0)
    timeZone = zone
  } catch {}
  const full = new Intl.DateTimeFormat(undefined, { timeZone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short' })
  const short = new Intl.DateTimeFormat(undefined, { timeZone, year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
  return {
    timeZone,
    /** @param {number} ms */
    full: (ms) => full.format(ms),
    /** @param {number} ms */
    short: (ms) => short.format(ms),
    /**
     * A <time> element: the instant in the zone, its UTC form on hover and in `datetime`.
     * @param {string | number} value an ISO 8601 instant or milliseconds since the epoch
     * @returns {HTMLTimeElement}
     */
    element (value) {
      const time = document.createElement('time')
      const ms = typeof value === 'number' ? value : Date.parse(value)
      if (!Number.isFinite(ms)) {
        time.textContent = String(value)
        return time
      }
      const utc = new Date(ms).toISOString()
      time.dateTime = utc
      time.title = utc.replace('T', ' ').replace(/\.000Z$/, 'Z').replace('Z', ' UTC')
      time.textContent = full.format(ms)
      return time
    }
  }
}

export class TimeBar {
  /**
   * @param {{ slider: HTMLInputElement, histogram: SVGSVGElement, value: HTMLTimeElement, clear: HTMLButtonElement,
   *   zoneNote: HTMLElement, control: HTMLElement, empty: HTMLElement, formats: ReturnType<typeof timeFormats>,
   *   onChange: (datetime: string) => void }} options
   */
  constructor (options) {
    this.o = options
    /** @type {Period[]} */
    this.periods = []
    /** @type {number[]} */
    this.counts = []
    this.datetime = ''
    this.generation = 0
    options.slider.addEventListener('input', () => this.pick(Number(options.slider.value), true))
    options.clear.addEventListener('click', () => this.pick(0, true))
  }

  /**
   * The dataset's KML time extent (null: no placemark has a time); `datetime` the period asked for by the address.
   * @param {[string | null, string | null] | null} interval
   * @param {string} datetime
   */
  setExtent (interval, datetime) {
    const start = interval?.[0] ? Date.parse(interval[0]) : NaN
    const end = interval?.[1] ? Date.parse(interval[1]) : start
    if (!Number.isFinite(start)) {
      this.o.empty.hidden = false
      this.o.control.hidden = true
      return
    }
    this.periods = periodsOf(start, Number.isFinite(end) ? end : start)
    this.o.control.hidden = false
    this.o.empty.hidden = true
    this.o.slider.max = String(this.periods.length)
    this.o.zoneNote.textContent = `Times in ${this.o.formats.timeZone === 'UTC' ? 'UTC' : this.o.formats.timeZone}; hover one for its UTC instant.`
    const index = this.periods.findIndex((p) => periodDatetime(p) === datetime)
    this.datetime = index >= 0 ? datetime : ''
    this.show(index >= 0 ? index + 1 : 0)
  }

  /**
   * Slider position 0 is every time, position i the period i - 1.
   * @param {number} position
   * @param {boolean} notify
   */
  pick (position, notify) {
    const period = position > 0 ? this.periods[position - 1] : undefined
    const datetime = period ? periodDatetime(period) : ''
    this.show(period ? position : 0)
    if (datetime !== this.datetime) {
      this.datetime = datetime
      if (notify) this.o.onChange(datetime)
    }
  }

  /** @param {number} position */
  show (position) {
    const { slider, value, clear, formats } = this.o
    slider.value = String(position)
    const period = position > 0 ? this.periods[position - 1] : undefined
    value.replaceChildren()
    if (period) {
      const from = formats.element(period.start)
      const to = formats.element(period.end)
      value.append(from, ' – ', to)
      const count = this.counts[position - 1]
      slider.setAttribute('aria-valuetext', `${formats.short(period.start)} to ${formats.short(period.end)}${count === undefined ? '' : `, ${count} placemarks`}`)
    } else {
      value.textContent = 'All times'
      slider.setAttribute('aria-valuetext', 'All times')
    }
    clear.hidden = !period
    this.draw()
  }

  /**
   * The histogram for these filters: one count per period (periods of one length, from the first), in
   * one request; a newer call wins.
   * @param {Histogram} histogram
   * @param {string} filters the filters counted, as a query string (the histogram's `data-filters`)
   */
  async load (histogram, filters) {
    const generation = ++this.generation
    const periods = this.periods
    const counts = periods.length === 0 ? [] : await histogram(periods[0].start, periods[0].end - periods[0].start, periods.length)
    if (generation !== this.generation) return
    this.counts = counts
    this.o.histogram.dataset.total = String(counts.reduce((a, b) => a + b, 0))
    this.o.histogram.dataset.filters = filters
    this.show(Number(this.o.slider.value))
  }

  draw () {
    const svg = this.o.histogram
    svg.replaceChildren()
    const n = this.periods.length
    if (!n) return
    const max = Math.max(1, ...this.counts)
    const width = 300 / n
    const chosen = Number(this.o.slider.value) - 1
    this.periods.forEach((period, i) => {
      const count = this.counts[i] ?? 0
      const height = count ? Math.max(2, (count / max) * 56) : 0
      const rect = document.createElementNS(SVG, 'rect')
      rect.setAttribute('x', String(i * width + 0.5))
      rect.setAttribute('width', String(Math.max(width - 1, 0.5)))
      rect.setAttribute('y', String(60 - height))
      rect.setAttribute('height', String(height))
      rect.setAttribute('class', i === chosen ? 'bar chosen' : 'bar')
      const title = document.createElementNS(SVG, 'title')
      title.textContent = `${this.o.formats.short(period.start)}: ${count} placemark${count === 1 ? '' : 's'}`
      rect.append(title)
      svg.append(rect)
    })
  }
}
