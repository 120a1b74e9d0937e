import t, { type Test } from 'tap'
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import type { FastifyInstance } from 'fastify'
import { buildApp, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { launchBrowser } from '../support/browser.ts'
import type { Config } from '../../lib/config.ts'

const artifacts = join(projectRoot, 'test-artifacts')

interface Feature { id: number; geometry: { type: string }; properties: { name: string; folder_path: string[]; media_links: string[]; description: string | null } }

// The policy the page is written for: nothing inline, every script and style from the server itself.
const strictPolicy = (imgSources = '') =>
  `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:${imgSources}; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'`

async function startApp (t: Test, overrides: Partial<Config>): Promise<{ app: FastifyInstance; base: string }> {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildApp({ config: testConfig({ ...overrides }), db: handle, logger: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

/** A page whose every answer carries the strict policy, and which records console errors and page errors. */
async function openPage (t: Test, browser: Browser, policy: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(20_000)
  const errors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (err) => errors.push(err.message))
  await page.route('**/*', async (route) => {
    const response = await route.fetch()
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': policy } })
  })
  return { page, errors }
}

const settled = (page: Page) => page.waitForFunction(() => {
  const status = document.getElementById('status')!
  return status.dataset.state === 'ready' && Boolean(status.dataset.url)
})
const status = (page: Page) => page.evaluate(() => ({ ...document.getElementById('status')!.dataset }))

t.test('the map page on the sample data', async (t) => {
  mkdirSync(artifacts, { recursive: true })
  const { base } = await startApp(t, {})
  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const { page, errors } = await openPage(t, browser, strictPolicy())

  await page.goto(`${base}/map`)
  await settled(page)
  const first = await status(page)
  const answer = await (await fetch(`${base}${first.url}`, { headers: { accept: 'application/geo+json' } })).json() as { features: Feature[]; count: number }
  const total = (await (await fetch(`${base}/api/v1/stats`)).json() as { total_placemarks: number }).total_placemarks
  t.equal(Number(first.count), answer.features.length, 'the page counts the features of its view\'s box answer')
  t.equal(await page.locator('#map path.placemark').count(), answer.features.length, 'and draws each of them')
  t.ok(answer.features.length >= total * 0.8 && answer.features.length < total, `the first view frames where most of the sample is (${answer.features.length} of ${total})`)
  for (const type of ['point', 'linestring', 'polygon']) t.ok(await page.locator(`#map path.placemark-${type}`).count() > 0, `${type}s drawn`)
  await page.screenshot({ path: join(artifacts, 'map.png'), animations: 'disabled' })

  // A popup: the name, the description sanitized (no images, which would load remotely), its links.
  const welcome = answer.features.find((f) => f.properties.description?.includes('<img'))!
  t.ok(welcome, 'a placemark whose description holds an image')
  await page.locator(`#map path[data-id="${welcome.id}"]`).dispatchEvent('click')
  const popup = page.locator('.leaflet-popup-content .popup')
  await popup.waitFor()
  t.equal(await popup.locator('h3').textContent(), welcome.properties.name)
  t.equal(await popup.locator('img').count(), 0, 'no image element')
  const links = await popup.locator('a').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href))
  t.ok(links.includes('https://example.org/photos/welcome-sign.jpg'), 'the image as a link')
  t.ok(links.includes(`${base}/api/v1/placemarks/${welcome.id}?format=geojson`), 'a link to the GeoJSON feature')
  if (welcome.properties.folder_path.length) t.equal(await popup.locator('.folder-path').textContent(), welcome.properties.folder_path.join(' › '))
  await page.screenshot({ path: join(artifacts, 'map-popup.png'), animations: 'disabled' })

  // The folder filter.
  const folders = await page.locator('#folder option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value).filter(Boolean))
  t.ok(folders.length >= 3, `${folders.length} folders to pick from`)
  const folder = folders.find((name) => answer.features.some((f) => f.properties.folder_path.includes(name)))!
  const inFolder = answer.features.filter((f) => f.properties.folder_path.includes(folder)).length
  await page.selectOption('#folder', folder)
  await page.waitForFunction((n) => document.getElementById('status')!.dataset.count === String(n), inFolder)
  t.equal(await page.locator('#map path.placemark').count(), inFolder, `only the ${inFolder} placemarks of “${folder}” are drawn`)
  t.ok(inFolder < answer.features.length)
  await page.screenshot({ path: join(artifacts, 'map-folder.png'), animations: 'disabled' })
  await page.selectOption('#folder', '')
  await page.waitForFunction((n) => document.getElementById('status')!.dataset.count === String(n), answer.features.length)

  // The search box: only the placemarks whose name or description holds every word, any case.
  const words = (f: Feature) => `${f.properties.name} ${f.properties.description ?? ''}`.toLowerCase()
  const found = answer.features.filter((f) => words(f).includes('tropicana')).length
  t.ok(found > 0 && found < answer.features.length, `${found} placemarks in view mention the Tropicana`)
  await page.fill('#search', 'TROPICANA')
  await page.waitForFunction((n) => document.getElementById('status')!.dataset.count === String(n) && document.getElementById('status')!.dataset.state === 'ready', found)
  t.match(await page.locator('#status').textContent(), /match “TROPICANA”/)
  t.equal(await page.locator('#map .placemark').count(), found, `only the ${found} matching placemarks are drawn`)
  await page.screenshot({ path: join(artifacts, 'map-search.png'), animations: 'disabled' })
  await page.fill('#search', '')
  await page.waitForFunction((n) => document.getElementById('status')!.dataset.count === String(n), answer.features.length)

  // The timeline: a chosen time highlights its events, in the list and on the map.
  const events = await page.locator('#events li').count()
  t.ok(events > 0, `${events} events listed`)
  await page.locator('#time').fill('1')
  await page.waitForFunction(() => document.querySelectorAll('#events li.chosen').length > 0)
  const chosen = await page.locator('#events li.chosen').count()
  t.equal(Number(await page.locator('#time-label').getAttribute('data-events')), chosen)
  t.equal(await page.locator('#map path.placemark.highlighted').count(), chosen, 'the chosen time\'s events are highlighted on the map')
  await page.screenshot({ path: join(artifacts, 'map-timeline.png'), animations: 'disabled' })

  // Moving the view loads the new box; the count follows its answer.
  await page.evaluate(() => (document.querySelector('.leaflet-control-zoom-in') as HTMLElement).click())
  await page.waitForFunction((url) => document.getElementById('status')!.dataset.url !== url, first.url)
  await settled(page)
  const zoomed = await status(page)
  const zoomedAnswer = await (await fetch(`${base}${zoomed.url}`, { headers: { accept: 'application/geo+json' } })).json() as { features: Feature[] }
  t.equal(Number(zoomed.count), zoomedAnswer.features.length, 'after zooming in: the count of the new box answer')
  t.equal(await page.locator('#map path.placemark').count(), zoomedAnswer.features.length)

  t.same(errors, [], 'no console error under a strict Content-Security-Policy')
})

t.test('with MAP_TILE_URL the page shows the base map and its attribution', async (t) => {
  // A tile server of the test's own: one transparent pixel for every tile.
  const pixel = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64')
  let tiles = 0
  const tileServer = createServer((_req, res) => {
    tiles++
    res.writeHead(200, { 'content-type': 'image/png' }).end(pixel)
  })
  await new Promise<void>((resolve) => tileServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => tileServer.close(resolve)))
  const tileOrigin = `http://127.0.0.1:${(tileServer.address() as AddressInfo).port}`
  const { base } = await startApp(t, { MAP_TILE_URL: `${tileOrigin}/{z}/{x}/{y}.png`, MAP_TILE_ATTRIBUTION: '© Test tiles <a href="https://example.org/terms">terms</a>' })
  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const { page, errors } = await openPage(t, browser, strictPolicy(` ${tileOrigin}`))
  await page.goto(`${base}/map`)
  await settled(page)
  await page.waitForFunction(() => document.querySelectorAll('.leaflet-tile-loaded').length > 0)
  t.ok(tiles > 0, `${tiles} tiles fetched`)
  t.match(await page.locator('.leaflet-control-attribution').textContent(), /© Test tiles terms/)
  t.equal(await page.locator('.leaflet-control-attribution a[href="https://example.org/terms"]').count(), 1, 'the attribution\'s link')
  t.same(errors, [], 'no console error')
})
