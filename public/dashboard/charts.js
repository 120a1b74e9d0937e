/*
 * The overview's chart (events per day, stacked by type, drawn by Chart.js) and the heatmap (an HTML
 * table of the 7 × 24 hours of the week, coloured by CSS classes). Every chart has its figures as a table
 * too, for keyboard and screen-reader users.
 */
import { h } from './dom.js'
import { TYPES } from './state.js'

/** @typedef {import('chart.js').Chart<'bar', number[], string>} BarChart */

export const TYPE_LABELS = {
  message: 'Messages',
  typing: 'Typing',
  message_delete: 'Deletions',
  reaction: 'Reactions',
  presence: 'Presence',
  role_change: 'Role changes',
  join: 'Joins',
  leave: 'Leaves'
}

/** Chart.js, loaded by its own script before the page's modules run. */
function chartLibrary () {
  const { Chart } = /** @type {{ Chart?: typeof import('chart.js').Chart }} */ (/** @type {unknown} */ (globalThis))
  if (!Chart) throw new Error('Chart.js did not load')
  return Chart
}

/**
 * The colours of the page's scheme (light or dark), as its stylesheet sets them.
 * @param {Element} element
 */
function palette (element) {
  const style = getComputedStyle(element)
  const read = (/** @type {string} */ name) => style.getPropertyValue(name).trim()
  return {
    text: read('--text'),
    grid: read('--grid'),
    types: Object.fromEntries(TYPES.map((type) => [type, read(`--type-${type}`)]))
  }
}

/**
 * @typedef {{ date: string, events: number, members: number } & Record<string, number | string>} Day
 */

/**
 * Events per local date, one stacked bar per date, one colour per type; the figures in a table under it.
 * @param {Day[]} days
 * @param {(n: number) => string} count
 * @returns {{ element: HTMLElement, draw: () => BarChart }}
 */
export function dailyChart (days, count) {
  const canvas = h('canvas', { role: 'img', 'aria-label': `Events per day, stacked by type, from ${days[0]?.date ?? ''} to ${days.at(-1)?.date ?? ''}; the figures are in the table below` })
  const box = h('div', { class: 'chart-box' }, canvas)
  const table = h('table', { class: 'data-table' },
    h('caption', {}, 'Events per day, by type'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Date'), h('th', { scope: 'col' }, 'Events'), h('th', { scope: 'col' }, 'Members'), TYPES.map((t) => h('th', { scope: 'col' }, TYPE_LABELS[t])))),
    h('tbody', {}, days.map((day) => h('tr', {}, h('th', { scope: 'row' }, day.date), h('td', { class: 'num' }, count(day.events)), h('td', { class: 'num' }, count(day.members)), TYPES.map((t) => h('td', { class: 'num' }, count(Number(day[t]))))))))
  const details = h('details', { class: 'chart-data' }, h('summary', {}, 'Events per day as a table'), h('div', { class: 'table-scroll' }, table))
  const element = h('figure', { class: 'chart' }, h('figcaption', {}, 'Events per day, by type'), box, details)
  const draw = () => {
    const Chart = chartLibrary()
    const colours = palette(box)
    // No animation: the chart is redrawn at every live update. Sized by its box (CSS), so Chart.js injects no style sheet.
    return new Chart(canvas, {
      type: 'bar',
      data: {
        labels: days.map((d) => d.date),
        datasets: TYPES.map((type) => ({ label: TYPE_LABELS[type], data: days.map((d) => Number(d[type])), backgroundColor: colours.types[type], stack: 'events' }))
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { stacked: true, ticks: { color: colours.text, maxRotation: 0, autoSkipPadding: 12 }, grid: { display: false } },
          y: { stacked: true, beginAtZero: true, ticks: { color: colours.text, precision: 0 }, grid: { color: colours.grid } }
        },
        plugins: { legend: { labels: { color: colours.text, boxWidth: 12 } } }
      }
    })
  }
  return { element, draw }
}

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
// Colour steps of the heatmap, above the empty one.
const LEVELS = 5

/**
 * @typedef {{ channelId: string, dayOfWeek: number, hour: number, messages: number, typing: number }} Cell
 */

/**
 * The hour-of-week grid of messages + typing (of one channel, or all of those given), in the zone the
 * API counted them in: rows Monday to Sunday, columns the hours 0 to 23, and a legend of its colours.
 * @param {Cell[]} cells
 * @param {(n: number) => string} count
 * @param {string} caption
 */
export function heatmapGrid (cells, count, caption) {
  const grid = Array.from({ length: 7 }, () => Array.from({ length: 24 }, () => ({ messages: 0, typing: 0 })))
  for (const cell of cells) {
    grid[cell.dayOfWeek][cell.hour].messages += cell.messages
    grid[cell.dayOfWeek][cell.hour].typing += cell.typing
  }
  const max = Math.max(0, ...grid.flat().map((c) => c.messages + c.typing))
  const level = (/** @type {number} */ n) => (n === 0 || max === 0 ? 0 : Math.max(1, Math.ceil((n / max) * LEVELS)))
  const table = h('table', { class: 'heatmap' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, h('td', {}), Array.from({ length: 24 }, (_, hour) => h('th', { scope: 'col' }, String(hour).padStart(2, '0'))))),
    h('tbody', {}, grid.map((hours, day) => h('tr', {},
      h('th', { scope: 'row' }, h('abbr', { title: DAYS[day] }, DAYS[day].slice(0, 3))),
      hours.map(({ messages, typing }, hour) => {
        const total = messages + typing
        return h('td', {
          class: `level-${level(total)}`,
          'data-day': day,
          'data-hour': hour,
          'data-messages': messages,
          'data-typing': typing,
          title: `${DAYS[day]} ${String(hour).padStart(2, '0')}:00: ${count(messages)} messages, ${count(typing)} typing`
        }, total === 0 ? '' : count(total))
      })))))
  // Each step's range of values, from the grid's maximum.
  const steps = [h('li', {}, h('span', { class: 'swatch level-0' }), 'none')]
  for (let l = 1; l <= LEVELS; l++) {
    const low = Math.floor(((l - 1) * max) / LEVELS) + 1
    const high = Math.floor((l * max) / LEVELS)
    if (high >= low) steps.push(h('li', {}, h('span', { class: `swatch level-${l}` }), low === high ? count(low) : `${count(low)}–${count(high)}`))
  }
  const legend = h('div', { class: 'legend' }, h('span', { id: 'heatmap-legend-title' }, 'Messages + typing per hour:'), h('ul', { 'aria-labelledby': 'heatmap-legend-title' }, steps))
  return h('figure', { class: 'heatmap-figure' }, h('div', { class: 'table-scroll' }, table), legend)
}
