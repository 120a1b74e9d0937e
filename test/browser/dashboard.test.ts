import t, { type Test } from 'tap'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { buildApp, freePort, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { axeFindings, launchBrowser } from '../support/browser.ts'
import { until } from '../support/shared-state.ts'
import type { Config } from '../../lib/config.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { createApiKey } from '../../db/api-keys.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../lib/auth/api-keys.ts'

const artifacts = join(projectRoot, 'test-artifacts')
mkdirSync(artifacts, { recursive: true })

const GUILD = '700000000000000001'
const QUIET_CORNER = '700000000000000002'
const TZ = 'Europe/Paris'
const LOCALE = 'en-US'

const browser = await launchBrowser()
t.teardown(() => browser.close())

interface Server { base: string; handle: DatabaseHandle; streams: () => string[]; renewals: () => number }

/** The server with the sample data (the demo guild's activity) on a port of its own, which its development provider's URLs name. */
async function startServer (t: Test, overrides: Partial<Config> = {}): Promise<Server> {
  const handle = await openTestDatabase(t, { sample: true })
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const app = await buildApp({ config: testConfig({ PORT: port, PUBLIC_URL: base, ...overrides }), db: handle, logger: false })
  const streams: string[] = []
  let renewed = 0
  // A stream's answer ends with the stream: it is counted as it starts, with the token it was opened with.
  app.addHook('onSend', async (request, reply) => {
    if (request.routeOptions.url === '/api/guilds/:guildId/events' && reply.statusCode === 200) streams.push(String(request.headers.authorization))
  })
  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url === '/api/auth/refresh' && reply.statusCode === 200) renewed++
  })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { base, handle, streams: () => streams, renewals: () => renewed }
}

interface Opened { context: BrowserContext; page: Page; problems: string[] }

/**
 * A new browser context (Paris time, US English) and its page, recording every CSP violation, console
 * error and page error; `expected` matches the console errors a test causes on purpose.
 */
async function openPage (t: Test, options: { width?: number; expected?: RegExp } = {}): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: options.width ?? 1200, height: 860 }, locale: LOCALE, timezoneId: TZ, acceptDownloads: true })
  t.teardown(() => context.close())
  const problems: string[] = []
  await context.exposeBinding('reportViolation', (_source, text: string) => { problems.push(text) })
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { reportViolation(text: string): void }).reportViolation(`CSP ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`)
    })
  })
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  // By default no console error at all: a signed-out visit asks for no renewal (there is no has_session marker).
  const expected = options.expected ?? /(?!)/
  page.on('console', (message) => { if (message.type() === 'error' && !expected.test(message.text())) problems.push(`console: ${message.text()}`) })
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
  return { context, page, problems }
}

/** Signs in from `path` as a demo user through the development provider and waits to be back on `path`, signed in. */
async function signInFrom (page: Page, base: string, path: string, user = 'ada') {
  await page.goto(`${base}${path}`)
  await page.waitForSelector('#sign-in', { state: 'visible' })
  await page.click('#sign-in')
  await page.waitForSelector('text=Development identity provider')
  await page.click(`a.user[data-user="${user}"]`)
  await page.waitForURL(`${base}${path}`)
  await page.waitForSelector(`text=Signed in as ${user}`)
}

/** An access token of the context's session (through its refresh cookie, as the page gets its own). */
async function tokenOf (context: BrowserContext, base: string): Promise<string> {
  const res = await context.request.post(`${base}/api/auth/refresh`)
  if (!res.ok()) throw new Error(`refresh answered ${res.status()}`)
  return ((await res.json()) as { accessToken: string }).accessToken
}

async function api<T = any> (base: string, token: string, path: string): Promise<T> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } })
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`)
  return res.json() as Promise<T>
}

// The page's formats, in the context's locale and zone.
const count = (n: number) => new Intl.NumberFormat(LOCALE).format(n)
const ratio = (n: number) => new Intl.NumberFormat(LOCALE, { maximumFractionDigits: 4 }).format(n)
const percent = (n: number) => new Intl.NumberFormat(LOCALE, { style: 'percent', maximumFractionDigits: 1, signDisplay: 'exceptZero' }).format(n)
const dateFormat = new Intl.DateTimeFormat(LOCALE, { timeZone: TZ, dateStyle: 'medium', timeStyle: 'short' })
const spaces = (s: string) => s.replace(/\s+/g, ' ')
const date = (d: string) => spaces(dateFormat.format(new Date(d)))

// The rows of an answer as the member table shows them: a member is their name and id, factors six numbers.
const TABLE_ROWS: Record<string, { key: string; row: (e: any) => string[] }> = {
  ghosts: { key: 'ghosts', row: (e) => [e.username, e.userId, ratio(e.ghostScore), count(e.typingCount), count(e.messageCount)] },
  lurkers: { key: 'lurkers', row: (e) => [e.username, e.userId, count(e.presenceCount), date(e.lastPresenceAt)] },
  suspicion: { key: 'members', row: (e) => [e.username, e.userId, count(e.score), ...['ghost', 'multiClient', 'deletes', 'roleChurn', 'fastReactions', 'newcomer'].map((f) => ratio(e.factors[f]))] },
  shifts: { key: 'members', row: (e) => [e.username, e.userId, count(e.current), count(e.previous), percent(e.change), e.direction] },
  roles: { key: 'members', row: (e) => [e.username, e.userId, count(e.changes), count(e.added), count(e.removed), e.drift ? 'yes' : 'no'] },
  clients: { key: 'newClients', row: (e) => [e.username, e.userId, e.client, date(e.firstSeenAt)] }
}
const TYPES = ['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave']

/** The member table's rows as shown, cell by cell (the member cell as name and id, the factors as their six values). */
const shownRows = (page: Page) => page.$$eval('table.members tbody tr', (trs) => trs.map((tr) => Array.from(tr.children).flatMap((cell) => {
  if (cell.classList.contains('member')) return [cell.querySelector('a')!.textContent!, cell.querySelector('.user-id')!.textContent!]
  const factors = cell.querySelectorAll('.factor-value')
  return factors.length ? Array.from(factors, (f) => f.textContent!) : [cell.textContent!]
}))).then((rows) => rows.map((row) => row.map(spaces)))

/** RFC 4180 text as rows of cells. */
function parseCsv (text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++ } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') { row.push(cell); cell = '' } else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++ } else cell += c
  }
  return rows
}
// What a spreadsheet would read as a formula is written as text.
const formulaSafe = (cell: string) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell)

/** The CSV the page downloads for its table. */
async function downloadCsv (page: Page): Promise<{ name: string; rows: string[][] }> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button.csv')])
  return { name: download.suggestedFilename(), rows: parseCsv(readFileSync((await download.path())!, 'utf8')) }
}

/** Opens a view through its tab and waits for what it shows to come from an answer. */
async function openView (page: Page, label: string, ready: string) {
  await page.click(`#views a:text-is("${label}")`)
  await page.waitForSelector(ready)
}

const viewPath = (query: string) => `/dashboard?guild=${GUILD}&${query}`

// One server for the tests that store nothing (the live test has its own, with short-lived tokens).
const { base } = await startServer(t)

t.test('signed in from a view, every view shows what the API answers', async (t) => {
  const { context, page, problems } = await openPage(t)

  const answer = await page.request.get(`${base}/dashboard`)
  t.notMatch(answer.headers()['content-security-policy'], /unsafe-inline|unsafe-eval/, 'the page\'s policy allows nothing inline, styles included')
  t.match(answer.headers()['content-security-policy'], /style-src 'self'(;|$)/)

  // Signed in from a sorted table, the sign-in comes back to it.
  await signInFrom(page, base, viewPath(`range=30d&tz=${encodeURIComponent(TZ)}&view=suspicion&sort=score&dir=asc`))
  t.pass('the sign-in came back to the view it started from')
  const token = await tokenOf(context, base)
  await page.waitForSelector('section.view-suspicion[data-source] table.members tbody tr')
  t.equal(await page.getAttribute('th[aria-sort]', 'aria-sort'), 'ascending', 'sorted as the address says')
  const suspicionSource = (await page.getAttribute('section.view-suspicion', 'data-source'))!
  const span = new URLSearchParams(suspicionSource.split('?')[1])
  t.equal(Date.parse(span.get('until')!) - Date.parse(span.get('since')!), 30 * 86_400_000, 'the window of the last 30 days')
  const suspicion = await api(base, token, suspicionSource)
  const ascending = [...suspicion.members].sort((a, b) => a.score - b.score || (a.userId < b.userId ? -1 : 1))
  t.same(await shownRows(page), ascending.slice(0, 25).map(TABLE_ROWS.suspicion!.row), 'the lowest scores first, each member\'s six factors')
  t.same(await axeFindings(page), [], 'axe: suspicion')

  // The overview: each card is the figure of the answer it names, the chart and its table the days, the top channels.
  await openView(page, 'Overview', '.card[data-key="suspicious"][data-source]')
  await page.waitForSelector('.chart canvas')
  const cards = await page.$$eval('.card', (cs) => cs.map((c) => ({ key: (c as HTMLElement).dataset.key!, source: (c as HTMLElement).dataset.source!, value: (c as HTMLElement).dataset.value, text: c.querySelector('dd')!.textContent! })))
  const figure: Record<string, (a: any) => number> = { events: (a) => a.totals.events, members: (a) => a.totals.members, ghosts: (a) => a.count, lurkers: (a) => a.count, suspicious: (a) => a.members.length }
  t.same(cards.map((c) => c.key), Object.keys(figure))
  for (const card of cards) {
    const expected = figure[card.key]!(await api(base, token, card.source))
    t.same([Number(card.value), card.text], [expected, count(expected)], `${card.key}: ${card.text}`)
  }
  t.match(cards.find((c) => c.key === 'suspicious')!.source, /minScore=50/)
  t.match(cards.find((c) => c.key === 'ghosts')!.source, /since=.*until=/, 'the ghosts are counted over the window, like every other card')
  const overview = await api(base, token, cards[0]!.source)
  t.equal(overview.timeZone, TZ)
  const dayRows = await page.$$eval('.chart-data tbody tr', (trs) => trs.map((tr) => Array.from(tr.children, (c) => c.textContent)))
  t.same(dayRows, overview.days.map((d: any) => [d.date, count(d.events), count(d.members), ...TYPES.map((type) => count(d[type]))]), `the chart's table: ${dayRows.length} days`)
  const plotted = await page.evaluate(() => {
    const { Chart } = window as unknown as { Chart: { getChart(c: Element): { data: { labels: string[]; datasets: Array<{ data: number[] }> } } } }
    const chart = Chart.getChart(document.querySelector('.chart canvas')!)
    return { labels: chart.data.labels, data: chart.data.datasets.map((d) => d.data) }
  })
  t.same(plotted, { labels: overview.days.map((d: any) => d.date), data: TYPES.map((type) => overview.days.map((d: any) => d[type])) }, 'the chart plots every type of every day')
  const channelRows = await page.$$eval('table.channels tbody tr', (trs) => trs.map((tr) => Array.from(tr.children, (c) => c.textContent)))
  t.same(channelRows, overview.channels.map((c: any) => [c.channelId, count(c.messages), count(c.typing), count(c.reactions), count(c.messages + c.typing + c.reactions)]), 'the top channels')
  t.same(await axeFindings(page), [], 'axe: overview')
  // The README's picture is test-artifacts/dashboard-overview.png, copied to docs/dashboard.png by hand when the page changes.
  await page.screenshot({ path: join(artifacts, 'dashboard-overview.png'), clip: { x: 0, y: 0, width: 1200, height: 700 } })

  // The heatmap: the hour-of-week grid in Paris time, all channels, then one.
  await openView(page, 'Heatmap', 'figure.heatmap-figure[data-source]')
  const heatSource = (await page.getAttribute('figure.heatmap-figure', 'data-source'))!
  t.match(heatSource, /timeZone=Europe%2FParis/)
  const heat = await api(base, token, heatSource)
  const grid = (channel: string) => {
    const sums = new Map<string, { m: number; t: number }>()
    for (const c of heat.cells) {
      if (channel && c.channelId !== channel) continue
      const key = `${c.dayOfWeek}/${c.hour}`
      const s = sums.get(key) ?? { m: 0, t: 0 }
      s.m += c.messages
      s.t += c.typing
      sums.set(key, s)
    }
    return Array.from({ length: 168 }, (_, i) => {
      const s = sums.get(`${Math.floor(i / 24)}/${i % 24}`) ?? { m: 0, t: 0 }
      return [Math.floor(i / 24), i % 24, s.m, s.t, s.m + s.t ? count(s.m + s.t) : '']
    })
  }
  const shownGrid = () => page.$$eval('table.heatmap tbody td', (tds) => tds.map((td) => {
    const d = (td as HTMLElement).dataset
    return [Number(d.day), Number(d.hour), Number(d.messages), Number(d.typing), td.textContent]
  }))
  t.same(await shownGrid(), grid(''), 'every hour of the week, all channels')
  t.ok(heat.cells.length > 20, `${heat.cells.length} cells in the answer`)
  t.ok(await page.locator('.legend li').count() >= 2, 'a colour legend')
  const channel = heat.channels[1].channelId
  await page.selectOption('#channel', channel)
  await page.waitForSelector(`figure.heatmap-figure[data-channel="${channel}"]`)
  t.same(await shownGrid(), grid(channel), `one channel: ${channel}`)
  t.match(page.url(), `channel=${channel}`)
  t.same(await axeFindings(page), [], 'axe: heatmap')
  await page.screenshot({ path: join(artifacts, 'dashboard-heatmap.png'), fullPage: true })

  // The member tables, each as its answer lists it, and its CSV as the table shows it.
  for (const view of ['ghosts', 'lurkers', 'shifts', 'roles', 'clients', 'suspicion']) {
    const label = { ghosts: 'Ghosts', lurkers: 'Lurkers', shifts: 'Shifts', roles: 'Role drift', clients: 'Clients', suspicion: 'Suspicion' }[view]!
    await openView(page, label, `section.view-${view}[data-source] .table-summary[data-count]`)
    const source = (await page.getAttribute(`section.view-${view}`, 'data-source'))!
    const tableAnswer = await api(base, token, source)
    const entries = tableAnswer[TABLE_ROWS[view]!.key] as any[]
    if (view === 'clients') {
      const perClient = await page.$$eval('table.clients tbody tr', (trs) => trs.map((tr) => Array.from(tr.children, (c) => c.textContent)))
      t.same(perClient, tableAnswer.clients.map((c: any) => [c.client, count(c.users), count(c.previousUsers), percent((c.users - c.previousUsers) / Math.max(c.previousUsers, 1))]), 'clients: this window against the previous one')
    }
    const shown = await shownRows(page)
    t.same(shown, entries.slice(0, 25).map(TABLE_ROWS[view]!.row), `${view}: the first ${shown.length} of ${entries.length}`)
    if (shown.length > 0) {
      const csv = await downloadCsv(page)
      t.equal(csv.rows[0]![0], 'Member')
      t.same(csv.rows.slice(1), shown.map((row) => row.map(formulaSafe)), `${view}: the CSV holds the rows shown (${csv.name})`)
      if (view === 'shifts') t.ok(csv.rows.flat().some((cell) => cell.startsWith("'-")), 'a change that starts with - is written as text')
    }
    t.same(await axeFindings(page), [], `axe: ${view}`)
    await page.screenshot({ path: join(artifacts, `dashboard-${view}.png`), fullPage: true })
  }

  // Lurkers with a lower threshold: the threshold is the API's parameter, in the address.
  await openView(page, 'Lurkers', 'section.view-lurkers[data-source] .table-summary[data-count]')
  await page.fill('section.view-lurkers input[type="number"]', '1')
  await page.press('section.view-lurkers input[type="number"]', 'Enter')
  await page.waitForSelector('section.view-lurkers[data-source*="minPresence=1"] .table-summary[data-count]')
  t.match(page.url(), /min=1/)

  // Sorting, searching and paging a table are in the address; back and forward walk through them.
  await openView(page, 'Ghosts', 'section.view-ghosts[data-source] table.members tbody tr')
  const ghosts = (await api(base, token, (await page.getAttribute('section.view-ghosts', 'data-source'))!)).ghosts as any[]
  const inApiOrder = await shownRows(page)
  await page.click('table.members th button:text("Typing")')
  await page.waitForSelector('th[aria-sort="descending"]:has-text("Typing")')
  const byTyping = [...ghosts].sort((a, b) => b.typingCount - a.typingCount || (a.userId < b.userId ? -1 : 1))
  t.same(await shownRows(page), byTyping.slice(0, 25).map(TABLE_ROWS.ghosts!.row), 'sorted by typing, most first')
  t.match(page.url(), /sort=typingCount&dir=desc/)
  await page.click('.pager button:text("Next page")')
  await page.waitForSelector('.page-of:text("Page 2 of 2")')
  t.same(await shownRows(page), byTyping.slice(25, 50).map(TABLE_ROWS.ghosts!.row), 'the second page')
  t.match(page.url(), /page=2/)
  await page.goBack()
  await page.waitForSelector('.page-of:text("Page 1 of 2")')
  await page.goBack()
  await page.waitForFunction(() => !document.querySelector('th[aria-sort]'))
  t.same(await shownRows(page), inApiOrder, 'back: the API\'s order again')
  await page.goForward()
  await page.waitForSelector('th[aria-sort="descending"]')
  t.same(await shownRows(page), byTyping.slice(0, 25).map(TABLE_ROWS.ghosts!.row), 'forward: sorted again')
  const someone = byTyping[3]
  const needle = someone.username.slice(0, 4).toUpperCase()
  await page.fill('section.view-ghosts input[type="search"]', needle)
  await page.waitForFunction((n) => new URL(location.href).searchParams.get('q') === n, needle)
  await page.waitForFunction(() => document.querySelector('.table-summary')!.textContent!.includes('matching'))
  const matching = byTyping.filter((g) => g.username.toLowerCase().includes(needle.toLowerCase()))
  t.same(await shownRows(page), matching.slice(0, 25).map(TABLE_ROWS.ghosts!.row), `searched for “${needle}”: ${matching.length} members`)
  const searchedCsv = await downloadCsv(page)
  t.same(searchedCsv.rows.slice(1), (await shownRows(page)).map((row) => row.map(formulaSafe)), 'the CSV of a search holds the rows found')

  // A member: their events newest first, more on scrolling, a type filter; their suspicion factors.
  const top = byTyping[0]
  await page.fill('section.view-ghosts input[type="search"]', '')
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('q'))
  await page.click(`table.members a:text-is("${top.username}")`)
  await page.waitForSelector('ol.timeline[data-source]')
  t.match(page.url(), `view=member&member=${top.userId}`)
  // The window's preset changes for the member too: the last 90 days.
  await page.selectOption('#range', '90d')
  await page.waitForFunction(() => /range=90d/.test(location.search) && /range=90d/.test(document.querySelector('#views a[aria-current]')!.getAttribute('href')!))
  await page.waitForFunction(() => {
    const source = document.querySelector('ol.timeline')?.getAttribute('data-source')
    const since = source && new URLSearchParams(source.split('?')[1]).get('since')
    return Boolean(since) && Date.now() - Date.parse(since!) > 80 * 86_400_000
  })
  await page.waitForSelector('.member-factors[data-source*="since"]')
  const timelineSource = (await page.getAttribute('ol.timeline', 'data-source'))!
  const first = await api(base, token, timelineSource)
  const shownEvents = () => page.$$eval('ol.timeline li', (lis) => lis.map((li) => [(li as HTMLElement).dataset.type, (li as HTMLElement).dataset.createdAt, li.querySelector('time')!.textContent]))
  const asShown = (events: any[]) => events.map((e) => [e.type, e.createdAt, date(e.createdAt)])
  t.same((await shownEvents()).map((e) => [e[0], e[1], spaces(e[2]!)]), asShown(first.events), `the first ${first.events.length} events, newest first`)
  const factorsShown = await page.$$eval('.member-factors .factor-value', (vs) => vs.map((v) => v.textContent))
  const factorsSource = (await page.getAttribute('.member-factors', 'data-source'))!
  t.match(factorsSource, `userId=${top.userId}`, 'the member\'s factors are asked for the member alone')
  const entry = (await api(base, token, factorsSource)).members.find((m: any) => m.userId === top.userId)
  t.same([await page.getAttribute('.member-factors .score', 'data-score'), ...factorsShown], [String(entry.score), ...TABLE_ROWS.suspicion!.row(entry).slice(3)], 'the member\'s score and factors')
  t.same(await axeFindings(page), [], 'axe: member')
  await page.screenshot({ path: join(artifacts, 'dashboard-member.png'), fullPage: true })
  if (first.nextCursor) {
    await page.locator('.sentinel').scrollIntoViewIfNeeded()
    await page.waitForFunction((n) => Number(document.querySelector('ol.timeline')!.getAttribute('data-count')) > n, first.events.length)
    const second = await api(base, token, `${timelineSource}&cursor=${encodeURIComponent(first.nextCursor)}`)
    t.same((await shownEvents()).slice(first.events.length).map((e) => [e[0], e[1], spaces(e[2]!)]), asShown(second.events), 'scrolling down loads the next page')
  } else t.fail(`the member has more than one page of events (${first.events.length})`)
  await page.check('#type-message')
  await page.waitForSelector('ol.timeline[data-source*="types=message"]')
  const messages = await api(base, token, (await page.getAttribute('ol.timeline', 'data-source'))!)
  t.same((await shownEvents()).map((e) => [e[0], e[1], spaces(e[2]!)]), asShown(messages.events), `only messages: ${messages.events.length}`)
  t.match(page.url(), /types=message/)

  // Without a zone in the address, the browser's is chosen and written into it.
  await page.goto(`${base}/dashboard?guild=${GUILD}`)
  await page.waitForFunction((tz) => new URLSearchParams(location.search).get('tz') === tz, TZ)
  t.equal(await page.inputValue('#tz'), TZ, 'the time zone is the browser\'s')

  // 375 px wide and dark: nothing wider than the screen, and still no finding.
  await page.setViewportSize({ width: 375, height: 800 })
  await page.emulateMedia({ colorScheme: 'dark' })
  await page.waitForSelector('.card[data-key="suspicious"][data-source]')
  t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'no sideways scrolling at 375 px')
  t.same(await axeFindings(page), [], 'axe: overview, narrow and dark')
  await page.screenshot({ path: join(artifacts, 'dashboard-narrow-dark.png'), fullPage: true })
  t.same(problems, [], 'no CSP violation or console error')
})

t.test('a signed-out first visit asks for no renewal and logs nothing; the marker comes and goes with the session', async (t) => {
  const { context, page, problems } = await openPage(t)
  const renewals: string[] = []
  page.on('request', (request) => { if (new URL(request.url()).pathname === '/api/auth/refresh') renewals.push(request.url()) })
  await page.goto(`${base}/dashboard?guild=${GUILD}&view=heatmap`)
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.same(renewals, [], 'no session marker: no renewal asked, so no refused one')
  t.same(problems, [], 'no console error on a signed-out first visit')
  t.same(await axeFindings(page), [], 'axe: signed out')

  await page.click('#sign-in')
  await page.click('a.user[data-user="ada"]')
  await page.waitForSelector('text=Signed in as ada')
  const marker = (await context.cookies()).find((c) => c.name === 'has_session')
  t.match(marker, { value: '1', path: '/', httpOnly: false, sameSite: 'Strict' }, 'signed in: the readable marker, which holds no secret')
  t.same(await page.evaluate(() => document.cookie), 'has_session=1', 'the page reads the marker, and nothing else')
  t.ok(renewals.length >= 1, 'the signed-in page got its token through the cookie')

  // A new tab of the signed-in browser: a token without a sign-in.
  const second = await context.newPage()
  second.on('console', (message) => { if (message.type() === 'error') problems.push(`console (second tab): ${message.text()}`) })
  await second.goto(`${base}/dashboard?guild=${GUILD}`)
  await second.waitForSelector('text=Signed in as ada')
  await second.close()

  await page.click('#sign-out')
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.notOk((await context.cookies()).some((c) => c.name === 'has_session' || c.name === 'refresh_token'), 'signed out: the marker is cleared with the refresh cookie')
  const asked = renewals.length
  await page.reload()
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.equal(renewals.length, asked, 'a visit after signing out asks nothing either')
  t.same(problems, [], 'and nothing was logged')
})

t.test('without a readable guild the page says why; a guild the user may not read says which permission is missing', async (t) => {
  const { page, problems } = await openPage(t)
  await signInFrom(page, base, '/dashboard', 'linus')
  await page.waitForSelector('#no-guild', { state: 'visible' })
  const explained = spaces((await page.textContent('#no-guild'))!)
  for (const words of ['owner', 'Administrator', 'Manage Server', 'ADMIN']) t.match(explained, words, `the rule names ${words}`)
  t.same(await axeFindings(page), [], 'axe: no guild')
  t.same(problems, [], 'nothing logged')

  // Ada may read the demo guild but not Quiet Corner (in her list, without the permission).
  const ada = await openPage(t, { expected: /status of (401|403)/ })
  await signInFrom(ada.page, base, `/dashboard?guild=${QUIET_CORNER}&tz=${encodeURIComponent(TZ)}`)
  await ada.page.waitForSelector('.card[data-key="events"] .error')
  const refused = spaces((await ada.page.textContent('.card[data-key="events"] .error'))!)
  t.match(refused, /^403 Forbidden: Insufficient permissions\. .*Administrator or Manage Server \(MANAGE_GUILD\)/, `shown where it happened: ${refused}`)
  await ada.page.waitForSelector('#live[data-state="refused"]')
  t.match(await ada.page.textContent('#live'), /403/, 'the live stream is refused too, and says so')
  t.same(await axeFindings(ada.page), [], 'axe: refused')
  t.same(ada.problems, [])
})

t.test('live: new activity shows within seconds, and the session outlives its access tokens', async (t) => {
  // Tokens of 6 s: renewed after 3 s, and the event stream ends with each one.
  const server = await startServer(t, { JWT_ACCESS_EXPIRES_IN: '6s' })
  const key = generateApiKey()
  await createApiKey(server.handle.db, { name: 'dashboard-test', keyHash: hashApiKey(key), prefix: apiKeyPrefix(key), guildIds: [GUILD] })
  const post = async (n: number) => {
    const createdAt = new Date(Date.now() - 1000).toISOString()
    const events = Array.from({ length: n }, (_, i) => ({ type: i % 2 ? 'typing' : 'message', guildId: GUILD, channelId: '720000000000000001', userId: '100000000000000001', username: 'ada', createdAt }))
    const res = await fetch(`${server.base}/api/activity`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ events }) })
    t.equal(res.status, 200, `${n} events stored`)
  }
  const { context, page, problems } = await openPage(t)
  // A window of whole dates that ends tomorrow (Paris time): it reaches the present, and stays the same window.
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toLocaleDateString('en-CA', { timeZone: TZ })
  await signInFrom(page, server.base, `/dashboard?guild=${GUILD}&range=custom&from=${day(-7)}&to=${day(1)}&tz=${encodeURIComponent(TZ)}`)
  await page.waitForSelector('#live[data-state="live"]')
  await page.waitForSelector('.card[data-key="events"][data-value]')
  const eventsCard = () => page.getAttribute('.card[data-key="events"]', 'data-value').then(Number)
  const before = await eventsCard()
  const updatedBefore = await page.getAttribute('#updated', 'data-at')

  await post(3)
  const posted = Date.now()
  await page.waitForFunction((n) => document.querySelector('.card[data-key="events"]')?.getAttribute('data-value') === String(n), before + 3)
  const took = Date.now() - posted
  t.ok(took < 5000, `the overview showed the new events ${took} ms after they were stored`)
  t.not(await page.getAttribute('#updated', 'data-at'), updatedBefore, 'the “updated at” time moved')
  t.match(await page.textContent('#updated'), /^Updated at /)
  const token = await tokenOf(context, server.base)
  const source = (await page.getAttribute('.card[data-key="events"]', 'data-source'))!
  t.equal((await api(server.base, token, source)).totals.events, before + 3, 'as the API counts them')

  // The first token expires: its stream ends and the page opens another with the renewed token.
  t.not(await until(async () => server.streams().length >= 2, 15_000), -1, 'the stream was opened again after the token expired')
  t.not(server.streams()[1], server.streams()[0], 'with the renewed token')
  await page.waitForSelector('#live[data-state="live"]')
  t.ok(server.renewals() >= 2, `${server.renewals()} renewals through the cookie`)
  await post(2)
  await page.waitForFunction((n) => document.querySelector('.card[data-key="events"]')?.getAttribute('data-value') === String(n), before + 5)
  t.pass('a live update through the new stream')
  await openView(page, 'Heatmap', 'figure.heatmap-figure[data-source]')
  t.equal(await page.isVisible('#sign-in'), false, 'still signed in')
  t.same(problems, [], 'no CSP violation or console error')
})

t.test('sign out, and sign out everywhere', async (t) => {
  const elsewhere = await openPage(t)
  await signInFrom(elsewhere.page, base, viewPath('view=heatmap&tz=UTC'))
  const { context, page } = await openPage(t)
  const path = viewPath(`tz=${encodeURIComponent(TZ)}`)
  await signInFrom(page, base, path)

  await page.click('#sign-out')
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.same([await page.isVisible('#sign-out'), await page.isVisible('#sign-out-everywhere')], [false, false], 'signed out: no sign-out button shows')
  t.notOk((await context.cookies()).some((c) => c.name === 'refresh_token'), 'signed out: the refresh cookie is cleared')
  t.same(await axeFindings(page), [], 'axe: signed out')

  await page.click('#sign-in')
  await page.click('a.user[data-user="ada"]')
  await page.waitForURL(`${base}${path}`)
  await page.waitForSelector('text=Signed in as ada')
  const otherToken = await tokenOf(elsewhere.context, base)
  t.equal((await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${otherToken}` } })).status, 200, 'the other browser is signed in')
  await page.click('#sign-out-everywhere')
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.equal((await fetch(`${base}/api/auth/me`, { headers: { authorization: `Bearer ${otherToken}` } })).status, 401, 'sign out everywhere: the other browser\'s session is over too')
  t.equal((await elsewhere.context.request.post(`${base}/api/auth/refresh`)).status(), 401, 'and its refresh cookie renews nothing')
})

t.test('offline shows as offline; a session ended elsewhere shows the sign-in', async (t) => {
  const { context, page, problems } = await openPage(t, { expected: /status of 401|ERR_INTERNET_DISCONNECTED/ })
  await signInFrom(page, base, viewPath(`tz=${encodeURIComponent(TZ)}`))
  await page.waitForSelector('#live[data-state="live"]')
  await context.setOffline(true)
  await page.waitForSelector('#connection[data-state="offline"]')
  await page.waitForSelector('#live[data-state="offline"]')
  t.match(await page.textContent('#connection'), /^Offline/)
  await context.setOffline(false)
  await page.waitForSelector('#connection[data-state="online"]', { state: 'attached' })
  await page.waitForSelector('#live[data-state="live"]')
  t.pass('back online: live again')

  const token = await tokenOf(context, base)
  const { sid } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }
  t.equal((await fetch(`${base}/api/auth/sessions/${sid}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status, 204)
  await page.waitForSelector('#sign-in', { state: 'visible' })
  t.pass('the session ended elsewhere: the page shows its sign-in')
  t.same(problems, [], 'nothing else logged')
})
