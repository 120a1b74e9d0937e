/**
 * The map page in a real Chromium (WebGL on the software renderer): drawn from the vector tiles with
 * MapLibre, on a generated dataset with KML styles, times, folders and an HTML description. The
 * clusters and points it draws add up to the dataset; the folder filter, the search and the time bar
 * count what the API counts; the address reopens the view; popups open from the keyboard; without WebGL
 * the page says so and links the data; axe finds nothing serious; the base map comes from MAP_TILE_URL.
 * On the project's own KMZ (examples/field-notes.kmz) the points are drawn with their KML icons, read
 * from /api/v1/icons/; an external icon, or one that does not load, leaves its points as circles.
 */
import t, { type Test } from 'tap'
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { Browser, BrowserContextOptions, Page } from 'playwright-core'
import type { FastifyInstance } from 'fastify'
import { buildApp, importFieldNotes, openTestDatabase, projectRoot, testConfig } from '../helper.ts'
import { axeFindings, drawnPoints, launchBrowser, mapIdle as idle } from '../support/browser.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { mulberry32 } from '../../scripts/generate-kml.ts'
import type { Config } from '../../lib/config.ts'
import type { DatabaseHandle } from '../../db/index.ts'

const artifacts = join(projectRoot, 'test-artifacts')
mkdirSync(artifacts, { recursive: true })

// Places around Las Vegas, each a folder: the whole dataset fits one view with no copy of the world.
const PLACES: [string, number, number, number][] = [['Strip', -115.17, 36.11, 0.06], ['Downtown', -115.14, 36.17, 0.03], ['Lake Mead', -114.74, 36.05, 0.2], ['Red Rock', -115.45, 36.14, 0.12]]
const POINTS = 6000
const WELCOME = 'Welcome sign with a photo'
const DAY0 = Date.UTC(2017, 9, 1)
// Google Earth's own icon, on another origin: the page never fetches it (its policy would refuse) and draws a circle.
const EXTERNAL_ICON = 'http://maps.google.com/mapfiles/kml/paddle/red-circle.png'

/** The dataset: styled points in four folders, half with a KML time over three days, styled lines and polygons, one HTML description. */
function datasetKml (): string {
  const rand = mulberry32(49)
  let kml = '<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n'
  kml += `<Style id="red"><IconStyle><color>ff2020d0</color><Icon><href>${EXTERNAL_ICON}</href></Icon></IconStyle></Style>\n`
  kml += '<Style id="blue-normal"><IconStyle><color>ffd06020</color></IconStyle><LineStyle><color>ff00a000</color><width>4</width></LineStyle><PolyStyle><color>8000c0ff</color></PolyStyle></Style>\n'
  kml += '<Style id="blue-highlight"><IconStyle><color>ffffffff</color></IconStyle></Style>\n'
  kml += '<StyleMap id="blue"><Pair><key>normal</key><styleUrl>#blue-normal</styleUrl></Pair><Pair><key>highlight</key><styleUrl>#blue-highlight</styleUrl></Pair></StyleMap>\n'
  for (const [folder, lon, lat, spread] of PLACES) {
    kml += `<Folder><name>${folder}</name>\n`
    for (let k = 0; k < POINTS / PLACES.length; k++) {
      const x = (lon + (rand() - 0.5) * spread).toFixed(6)
      const y = (lat + (rand() - 0.5) * spread * 0.8).toFixed(6)
      const name = k % 50 === 0 ? `Beacon ${folder} ${k}` : `Place ${folder} ${k}`
      const time = k % 2 === 0 ? `<TimeStamp><when>${new Date(DAY0 + Math.floor(rand() * 3 * 86_400_000)).toISOString().replace('.000', '')}</when></TimeStamp>` : ''
      kml += `<Placemark><name>${name}</name><styleUrl>#${k % 3 === 0 ? 'blue' : 'red'}</styleUrl>${time}<Point><coordinates>${x},${y},0</coordinates></Point></Placemark>\n`
    }
    for (let k = 0; k < 10; k++) {
      const x = lon + (rand() - 0.5) * spread
      const y = lat + (rand() - 0.5) * spread * 0.8
      kml += `<Placemark><name>Road ${folder} ${k}</name><styleUrl>#blue</styleUrl><LineString><coordinates>${x},${y},0 ${x + 0.01},${y + 0.006},0 ${x + 0.02},${y + 0.002},0</coordinates></LineString></Placemark>\n`
      kml += `<Placemark><name>Zone ${folder} ${k}</name><styleUrl>#blue</styleUrl><Polygon><outerBoundaryIs><LinearRing><coordinates>${x},${y},0 ${x + 0.006},${y},0 ${x + 0.006},${y + 0.005},0 ${x},${y},0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>\n`
    }
    kml += '</Folder>\n'
  }
  kml += `<Placemark><name>${WELCOME}</name><description><![CDATA[<p>Hello <b>visitors</b><img src="https://example.org/photos/welcome-sign.jpg"><script>document.title = 'owned'</script> <a href="https://example.org/more" onclick="alert(1)">more</a></p>]]></description>` +
    '<TimeStamp><when>2017-10-01T22:08:00Z</when></TimeStamp><styleUrl>#red</styleUrl><Point><coordinates>-115.1728,36.0820,0</coordinates></Point></Placemark>\n'
  return kml + '</Document></kml>\n'
}

const handle: DatabaseHandle = await openTestDatabase(t)
// Imported in Las Vegas's zone: the page shows its times there (its TimeStamps are UTC instants).
await importPlacemarks(handle, Readable.from([datasetKml()]), { timeZone: 'America/Los_Angeles', source: 'map.kml' })

async function startApp (t: Test, overrides: Partial<Config> = {}, db: DatabaseHandle = handle): Promise<{ app: FastifyInstance; base: string }> {
  const app = await buildApp({ config: testConfig({ RATE_LIMIT_MAX: 1_000_000, ...overrides }), db, logger: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  await app.boxIndex.idle()
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

const { base } = await startApp(t)
const browser: Browser = await launchBrowser({ webgl: true })
t.teardown(() => browser.close())

const api = async (path: string) => (await fetch(`${base}${path}`, { headers: { accept: 'application/json' } })).json() as Promise<any>
const matched = async (params: Record<string, string>) => (await api(`/ogc/collections/placemarks/items?${new URLSearchParams({ ...params, limit: '1' })}`)).numberMatched as number

/** A new context and page, recording console errors and page errors. */
async function openPage (t: Test, options: BrowserContextOptions = {}): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(30_000)
  const errors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (err) => errors.push(err.message))
  return { page, errors }
}

/** The page's filters applied and their tiles drawn. */
async function drawn (page: Page): Promise<Record<string, string | undefined>> {
  await page.waitForFunction(() => {
    const status = document.getElementById('status')!
    return status.dataset.state === 'ready' && status.dataset.drawn === 'true'
  })
  await idle(page)
  return page.evaluate(() => ({ ...document.getElementById('status')!.dataset }))
}

const stats = await api('/api/v1/stats')

t.test('the whole dataset drawn from the tiles, clusters adding up, then panned and zoomed', async (t) => {
  const { page, errors } = await openPage(t)
  const response = await page.goto(`${base}/map`)
  const policy = response!.headers()['content-security-policy']!
  t.match(policy, /script-src 'self'/)
  t.match(policy, /style-src 'self'(;|$)/, 'styles from the server only')
  t.match(policy, /worker-src 'self'/, 'MapLibre\'s worker from the server')
  t.notMatch(policy, /unsafe-inline|unsafe-eval|blob:/, 'nothing inline, no eval, no blob:')
  const status = await drawn(page)
  t.equal(Number(status.count), stats.total_placemarks, 'the count is the dataset\'s')
  t.equal(Number(status.total), stats.total_placemarks)
  const whole = await drawnPoints(page)
  t.ok(whole.clusters > 0, `${whole.clusters} clusters and ${whole.points} lone points drawn`)
  t.equal(whole.labels, whole.clusters, 'each cluster has its count written on it')
  t.equal(whole.placemarks, stats.geometry_types.Point, 'cluster counts plus lone points are every Point placemark')
  // The lines and polygons, each smaller than a cell at this zoom, counted in the clusters of shapes or drawn alone.
  const shapes = (stats.geometry_types.LineString ?? 0) + (stats.geometry_types.Polygon ?? 0)
  t.ok(whole.shapes > 0, `${whole.shapes} lines and polygons in clusters, ${whole.drawnShapes} drawn`)
  t.equal(whole.shapes + whole.drawnShapes, shapes, 'every line and polygon')
  const colours = await page.evaluate(() => {
    const map = (globalThis as any).placemarkMap
    return [...new Set(map.queryRenderedFeatures({ layers: ['clusters', 'points'] }).map((f: any) => f.properties.color))]
  })
  t.ok(colours.length >= 1 && colours.every((c) => typeof c === 'string' && /^#[0-9a-f]{8}$/.test(c as string)), `KML colours on the features: ${colours.join(', ')}`)
  await page.screenshot({ path: join(artifacts, 'map.png') })
  t.same(await axeFindings(page), [], 'axe: no serious or critical violation')

  // A cluster of shapes' badge and count are drawn SHAPE_OFFSET pixels off its position (clear of the point
  // cluster a cell may hold there too); the translated badge is what a click finds, and it zooms in there.
  const badge = await page.evaluate(async () => {
    const map = (globalThis as any).placemarkMap
    const { SHAPE_OFFSET: [dx, dy] } = await import('/map/assets/style.js' as string)
    // (No named function here: the TypeScript loader would wrap it in a helper the page has not.)
    const badges = map.queryRenderedFeatures({ layers: ['clusters'] })
      .filter((f: any) => f.properties.shape_count !== undefined)
      .map((f: any) => ({ f, point: [map.project(f.geometry.coordinates).x + dx, map.project(f.geometry.coordinates).y + dy] }))
    // One whose badge has no placemark under it to click as well (another cluster's circle may be there, below).
    const { f, point } = badges.find((b: any) => map.queryRenderedFeatures(b.point, { layers: ['icons', 'points', 'lines', 'polygons'] }).length === 0)
    const key = JSON.stringify([f.properties.shape_count, f.geometry.coordinates])
    const canvas = map.getCanvas().getBoundingClientRect()
    return {
      offset: [dx, dy],
      center: f.geometry.coordinates as [number, number],
      top: map.queryRenderedFeatures(point, { layers: ['shape-cluster-badges', 'clusters'] }).slice(0, 1).map((g: any) => [g.layer.id, JSON.stringify([g.properties.shape_count, g.geometry.coordinates]) === key]),
      counts: map.queryRenderedFeatures(point, { layers: ['cluster-counts'] }).filter((g: any) => JSON.stringify([g.properties.shape_count, g.geometry.coordinates]) === key).length,
      client: [canvas.left + point[0], canvas.top + point[1]]
    }
  })
  t.ok(Math.hypot(badge.offset[0], badge.offset[1]) >= 15, `the badges ${badge.offset.join(', ')} px off their clusters`)
  t.same(badge.top, [['shape-cluster-badges', true]], 'the badge, translated, is the top feature at its place')
  t.equal(badge.counts, 1, 'its count written on it')
  const whole0 = await page.evaluate(() => { const m = (globalThis as any).placemarkMap; return { center: m.getCenter(), zoom: m.getZoom() } })
  await page.mouse.click(badge.client[0], badge.client[1])
  await page.waitForFunction((z) => (globalThis as any).placemarkMap.getZoom() > z + 1.9, whole0.zoom)
  await idle(page)
  const zoomedAt = await page.evaluate(() => (globalThis as any).placemarkMap.getCenter())
  t.ok(Math.abs(zoomedAt.lng - badge.center[0]) < 1e-5 && Math.abs(zoomedAt.lat - badge.center[1]) < 1e-5, 'a click on the badge zooms into its cluster')
  await page.evaluate((v) => (globalThis as any).placemarkMap.jumpTo(v), whole0)
  await idle(page)

  // A click on a cluster zooms in.
  const before = await page.evaluate(() => (globalThis as any).placemarkMap.getZoom())
  await page.locator('#visible button.cluster').first().click()
  await page.waitForFunction((z) => (globalThis as any).placemarkMap.getZoom() > z + 1, before)
  await idle(page)
  t.ok(await page.evaluate(() => document.getElementById('visible')!.contains(document.activeElement)), 'the focus stays in the list')

  // Pan and zoom through several levels, the lines and polygons drawn at the end.
  for (const [zoom, dx] of [[10, 200], [12, -300], [13, 150], [15, -100], [17, 50]]) {
    await page.evaluate(([z, x]) => {
      const map = (globalThis as any).placemarkMap
      map.jumpTo({ center: [-115.17, 36.11], zoom: z })
      map.panBy([x, 40], { duration: 0 })
    }, [zoom, dx])
    await idle(page)
  }
  await page.evaluate(() => (globalThis as any).placemarkMap.jumpTo({ center: [-115.45, 36.14], zoom: 11 }))
  await idle(page)
  const kinds = await page.evaluate(() => (globalThis as any).placemarkMap.queryRenderedFeatures({ layers: ['lines', 'polygons'] }).map((f: any) => f.properties.geometry_type))
  t.ok(kinds.includes('LineString') && kinds.includes('Polygon'), 'lines and polygons drawn')
  t.match(new URL(page.url()).search, /lat=36\.14\d*&lon=-115\.45\d*&z=11\.00/, 'the address follows the view')
  t.same(errors, [], 'no console error')
})

t.test('folder, search and time filter the tiles and count the dataset, and the address reopens the view', async (t) => {
  const { page, errors } = await openPage(t)
  // The time bar's counts: one histogram request per set of filters, not a count per period.
  const histogramRequests: string[] = []
  page.on('request', (r) => {
    const url = new URL(r.url())
    if (url.pathname === '/api/v1/time-histogram') histogramRequests.push(url.search)
    if (url.pathname === '/ogc/collections/placemarks/items' && url.searchParams.get('limit') === '1' && url.searchParams.has('datetime')) histogramRequests.push(`a count: ${url.search}`)
  })
  await page.goto(`${base}/map`)
  await drawn(page)

  await page.selectOption('#folder', 'Downtown')
  await page.waitForFunction(() => new URLSearchParams(location.search).get('folder') === 'Downtown')
  let status = await drawn(page)
  t.equal(Number(status.count), await matched({ folder: 'Downtown' }), `“Downtown”: ${status.count}, as the API counts`)
  t.match(await page.locator('#status').textContent(), /in “Downtown”, of [\d,]+ placemarks in all/)
  const downtown = await drawnPoints(page)
  t.equal(downtown.placemarks, await matched({ folder: 'Downtown', geometry_type: 'Point' }), 'the view moved to the folder, whose points all are drawn, and only they')
  await page.screenshot({ path: join(artifacts, 'map-folder.png') })

  await page.fill('#search', 'BEACON')
  await page.waitForFunction(() => new URLSearchParams(location.search).get('q') === 'BEACON')
  status = await drawn(page)
  const beacons = await matched({ folder: 'Downtown', q: 'BEACON' })
  t.ok(beacons > 0)
  t.equal(Number(status.count), beacons, `search in the folder: ${beacons}, as the API counts`)
  t.equal((await drawnPoints(page)).placemarks, beacons, 'the matches drawn')

  // The time bar: the histogram counts the timed placemarks of these filters; a period filters through datetime.
  await page.waitForFunction(() => document.getElementById('histogram')!.dataset.filters === 'folder=Downtown&q=BEACON')
  const histogramTotal = Number(await page.locator('#histogram').getAttribute('data-total'))
  t.equal(histogramTotal, await matched({ folder: 'Downtown', q: 'BEACON', datetime: '1900-01-01T00:00:00Z/..' }), 'the histogram holds the timed matches')
  t.ok(histogramRequests.length > 0 && histogramRequests.every((r) => !r.startsWith('a count')), `the histogram in one request per set of filters: ${histogramRequests.join(' ')}`)
  t.ok(histogramRequests.some((r) => r.includes('folder=Downtown') && r.includes('q=BEACON')), 'with the filters')
  const heights = await page.locator('#histogram rect').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))))
  const busiest = heights.indexOf(Math.max(...heights))
  await page.locator('#time').fill(String(busiest + 1))
  await page.waitForFunction(() => new URLSearchParams(location.search).has('datetime'))
  status = await drawn(page)
  const datetime = new URLSearchParams(new URL(page.url()).search).get('datetime')!
  t.equal(Number(status.count), await matched({ folder: 'Downtown', q: 'BEACON', datetime }), `the period ${datetime}, as the API counts`)
  t.ok(Number(status.count) > 0)
  t.match(await page.locator('#time-value time').first().getAttribute('title'), /^2017-10-0\d \d\d:\d\d:\d\d UTC$/, 'the UTC instant on hover')
  const links = { geojson: await page.locator('#export-geojson').getAttribute('href'), kml: await page.locator('#export-kml').getAttribute('href') }
  t.match(links.geojson, /^\/ogc\/collections\/placemarks\/items\?folder=Downtown&q=BEACON&datetime=[^&]+&bbox=[-\d.,%C]+&limit=10000$/, 'the GeoJSON export: these filters and this view')
  t.match(links.kml, /^\/api\/v1\/export\.kml\?folder=Downtown&q=BEACON&datetime=[^&]+&bbox=/, 'the KML export: folder, words, period and view')
  const exported = await api(links.geojson!)
  t.equal(exported.numberMatched, Number(status.count), 'the export holds what is shown')
  const kml = await page.evaluate(async (href) => (await fetch(href)).text(), links.kml!)
  t.equal(kml.match(/<Placemark\b/g)?.length ?? 0, Number(status.count), 'the KML export too')

  // The address reopens the same view in a new page.
  const address = page.url()
  const camera = await page.evaluate(() => { const m = (globalThis as any).placemarkMap; return { ...m.getCenter(), zoom: m.getZoom() } })
  const again = await openPage(t)
  await again.page.goto(address)
  const reopened = await drawn(again.page)
  t.equal(reopened.count, status.count, 'the same count')
  t.equal(await again.page.inputValue('#folder'), 'Downtown')
  t.equal(await again.page.inputValue('#search'), 'BEACON')
  t.equal(await again.page.inputValue('#time'), String(busiest + 1), 'the same period')
  const camera2 = await again.page.evaluate(() => { const m = (globalThis as any).placemarkMap; return { ...m.getCenter(), zoom: m.getZoom() } })
  t.ok(Math.abs(camera2.lat - camera.lat) < 1e-4 && Math.abs(camera2.lng - camera.lng) < 1e-4 && Math.abs(camera2.zoom - camera.zoom) < 0.01, 'the same centre and zoom')
  t.equal(again.page.url(), address, 'the address unchanged')
  t.same([...errors, ...again.errors], [], 'no console error')
})

t.test('popups from the keyboard, sanitised; axe; a phone in dark mode', async (t) => {
  const { page, errors } = await openPage(t, { viewport: { width: 375, height: 740 }, colorScheme: 'dark' })
  const requested: string[] = []
  page.on('request', (request) => { requested.push(request.url()) })
  await page.goto(`${base}/map?${new URLSearchParams({ lat: '36.082', lon: '-115.1728', z: '17', q: 'welcome sign' })}`)
  await drawn(page)
  // Its style's icon is Google Earth's, on another origin: a circle of its colour, nothing fetched from there.
  const drawnAs = await page.evaluate(() => Object.fromEntries(['points', 'icons'].map((layer) => [layer, (globalThis as any).placemarkMap.queryRenderedFeatures({ layers: [layer] })
    .map((f: any) => ({ name: f.properties.name, icon: f.properties.icon, color: f.properties.color }))])))
  t.same(drawnAs, { points: [{ name: WELCOME, icon: EXTERNAL_ICON, color: '#d02020ff' }], icons: [] }, 'an external icon: the circle in the icon colour')
  t.same(requested.filter((url) => !url.startsWith(`${base}/`)), [], 'nothing asked of another origin')
  t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'nothing wider than the phone')
  t.ok((await page.locator('#map').boundingBox())!.height > 250, 'the map has room')
  const item = page.locator('#visible button', { hasText: WELCOME })
  await item.focus()
  await page.keyboard.press('Enter')
  const popup = page.locator('.maplibregl-popup .popup')
  await popup.waitFor()
  t.ok(await page.evaluate(() => document.activeElement?.closest('.maplibregl-popup') !== null), 'the focus moves into the popup')
  t.equal(await popup.locator('h2').textContent(), WELCOME)
  t.equal(await popup.locator('img, script').count(), 0, 'no image, no script')
  t.equal(await page.title(), 'Placemark map', 'the description\'s script did not run')
  t.equal(await popup.locator('[onclick]').count(), 0, 'no event handler')
  const hrefs = await popup.locator('a').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href))
  t.ok(hrefs.includes('https://example.org/photos/welcome-sign.jpg'), 'the image as a link')
  t.ok(hrefs.includes('https://example.org/more'), 'the description\'s link')
  t.equal(await popup.locator('time').getAttribute('title'), '2017-10-01 22:08:00 UTC', 'the UTC instant on hover')
  t.match(await popup.locator('time').textContent(), /3:08:00\s?PM PDT/, 'shown in the dataset\'s zone (the import\'s --timezone)')
  t.same(await axeFindings(page), [], 'axe: no serious or critical violation, popup open')
  await page.screenshot({ path: join(artifacts, 'map-phone.png') })
  await page.keyboard.press('Escape')
  await popup.waitFor({ state: 'detached' })
  t.ok(await item.evaluate((button) => button === document.activeElement), 'Escape closes the popup, the focus back on the list')
  t.same(errors, [], 'no console error')
})

t.test('without WebGL: a message and the data\'s links', async (t) => {
  const { page, errors } = await openPage(t)
  await page.addInitScript(() => {
    const getContext = HTMLCanvasElement.prototype.getContext
    HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement, type: string, ...rest: unknown[]) {
      return /webgl/i.test(type) ? null : (getContext as any).call(this, type, ...rest)
    } as typeof getContext
  })
  await page.goto(`${base}/map?folder=Downtown`)
  await page.waitForFunction(() => document.getElementById('status')!.dataset.state === 'unsupported')
  t.ok(await page.locator('#no-webgl').isVisible(), 'the message shows')
  const hrefs = await page.locator('#no-webgl a').evaluateAll((as) => as.map((a) => a.getAttribute('href')))
  t.same(hrefs.slice(0, 2), ['/ogc/collections/placemarks/items?folder=Downtown&limit=10000', '/api/v1/export.kml?folder=Downtown'], 'GeoJSON and KML of the folder')
  t.equal((await fetch(`${base}${hrefs[1]}`)).status, 200)
  t.same(await axeFindings(page), [], 'axe')
  await page.screenshot({ path: join(artifacts, 'map-no-webgl.png') })
  t.same(errors, [], 'no console error')
})

t.test('with MAP_TILE_URL the page shows the base map and its attribution', async (t) => {
  // A tile server of the test's own: one transparent pixel for every tile.
  const pixel = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64')
  let tiles = 0
  const tileServer = createServer((_req, res) => {
    tiles++
    res.writeHead(200, { 'content-type': 'image/png', 'access-control-allow-origin': '*' }).end(pixel)
  })
  await new Promise<void>((resolve) => tileServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => tileServer.close(resolve)))
  const tileOrigin = `http://127.0.0.1:${(tileServer.address() as AddressInfo).port}`
  const other = await startApp(t, { MAP_TILE_URL: `${tileOrigin}/{z}/{x}/{y}.png`, MAP_TILE_ATTRIBUTION: '© Test tiles <a href="https://example.org/terms">terms</a><img src=x onerror="alert(1)">' })
  const { page, errors } = await openPage(t)
  const response = await page.goto(`${other.base}/map`)
  const policy = response!.headers()['content-security-policy']!
  t.match(policy, new RegExp(`img-src 'self' data: ${tileOrigin}(;|$)`), 'images from the tile host')
  t.match(policy, new RegExp(`connect-src 'self' ${tileOrigin}(;|$)`), 'and connections to it, no other')
  await drawn(page)
  t.ok(tiles > 0, `${tiles} base tiles fetched`)
  t.match(await page.locator('.maplibregl-ctrl-attrib').textContent(), /© Test tiles terms/)
  t.equal(await page.locator('.maplibregl-ctrl-attrib a[href="https://example.org/terms"]').count(), 1, 'the attribution\'s link')
  t.equal(await page.locator('.maplibregl-ctrl-attrib img').count(), 0, 'the attribution sanitised')
  t.same(errors, [], 'no console error')
})

t.test('the points of the project\'s KMZ drawn with its icons, read from /api/v1/icons/', async (t) => {
  const notes = await openTestDatabase(t)
  await importFieldNotes(notes)
  const { base: notesBase } = await startApp(t, {}, notes)
  const notesApi = async (path: string) => (await fetch(`${notesBase}${path}`, { headers: { accept: 'application/json' } })).json() as Promise<any>
  const view = new URLSearchParams({ lat: '36.11', lon: '-115.171', z: '14' }) // the Strip's notes, at the first zoom without clusters
  /** The ids of the Point placemarks in a box, as the API finds them. */
  const pointsIn = async (bbox: string) => ((await notesApi(`/ogc/collections/placemarks/items?${new URLSearchParams({ bbox, geometry_type: 'Point', limit: '1000' })}`)).features as { id: number }[]).map((f) => f.id)

  /** What the view draws: each lone point once, by layer, with its icon attribute. */
  // (No named function inside page.evaluate: the TypeScript loader would wrap it in a helper the page has not.)
  const pointsDrawn = (page: Page) => page.evaluate(() => {
    const map = (globalThis as any).placemarkMap
    const [icons, circles] = ['icons', 'points'].map((layer): [number, string][] => [...new Map<number, string>(map.queryRenderedFeatures({ layers: [layer] }).map((f: any) => [f.id, f.properties.icon])).entries()])
    const b = map.getBounds()
    return { icons, circles, bbox: [b.getWest(), b.getSouth(), b.getEast(), b.getNorth()].join(',') }
  })

  await t.test('each icon fetched once from this server and drawn as it is', async (t) => {
    const { page, errors } = await openPage(t)
    const requested: string[] = []
    page.on('request', (request) => { requested.push(request.url()) })
    await page.goto(`${notesBase}/map?${view}`)
    await drawn(page)
    const icons = requested.filter((url) => url.includes('/api/v1/icons/')).map((url) => url.slice(notesBase.length)).sort()
    t.same(icons, ['/api/v1/icons/images/icon-1.png', '/api/v1/icons/images/icon-2.png', '/api/v1/icons/images/icon-3.png', '/api/v1/icons/images/icon-4.png'], 'the four icons of the KMZ, each asked for once')
    t.equal(requested.filter((url) => url === `${notesBase}/api/v1/icons`).length, 1, 'their list, once')
    t.same(requested.filter((url) => !url.startsWith(`${notesBase}/`)), [], 'nothing asked of another origin')
    const shown = await pointsDrawn(page)
    t.ok(shown.icons.length > 20, `${shown.icons.length} points drawn with their icon`)
    t.ok(shown.icons.every(([, icon]) => /^images\/icon-[1-4]\.png$/.test(icon)), 'each with its style\'s icon')
    t.same(shown.circles, [], 'no point left as a circle: every style of the KMZ has its icon')
    const inView = await pointsIn(shown.bbox)
    const drawnIds = new Set(shown.icons.map(([id]) => id))
    t.ok(inView.length > 20 && inView.every((id) => drawnIds.has(id)), `every point of the view drawn (${inView.length}; an icon across the view's edge counts too)`)
    t.same(await page.evaluate(() => (globalThis as any).placemarkMap.hasImage('kml-icon #ffffffff images/icon-1.png')), true, 'the image under its name: no IconStyle colour, drawn as it is')

    // A point drawn as an icon opens its popup like any other.
    const item = page.locator('#visible button', { hasText: /Strip note/ }).first()
    const name = (await item.textContent())!.replace(/ \(.*\)$/, '')
    await item.click()
    const popup = page.locator('.maplibregl-popup .popup')
    await popup.waitFor()
    t.equal(await popup.locator('h2').textContent(), name, 'the list reaches the icons\' placemarks')
    t.same(await axeFindings(page), [], 'axe: no serious or critical violation')
    await page.screenshot({ path: join(artifacts, 'map-icons.png') })
    t.same(errors, [], 'no console error')
  })

  await t.test('an icon the KMZ lacks is not asked for, one that does not load leaves its points as circles, with no console error', async (t) => {
    const { page, errors } = await openPage(t)
    // As if the KMZ had not held icon-4 (the list leaves it out) and held a broken icon-3 (not a PNG after all).
    const requested: string[] = []
    page.on('request', (request) => { requested.push(request.url()) })
    await page.route('**/api/v1/icons', async (route) => {
      const body = await (await route.fetch()).json() as { icons: { name: string }[] }
      const icons = body.icons.filter((icon) => icon.name !== 'images/icon-4.png')
      await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ icons, count: icons.length }) })
    })
    await page.route('**/api/v1/icons/images/icon-3.png', (route) => route.fulfill({ status: 200, contentType: 'image/png', body: 'not a png' }))
    await page.goto(`${notesBase}/map?${view}`)
    const status = await drawn(page)
    t.equal(status.state, 'ready', 'the page is not in error')
    await page.waitForFunction(() => (globalThis as any).placemarkMap.queryRenderedFeatures({ layers: ['points'] }).length > 0)
    await idle(page)
    const shown = await pointsDrawn(page)
    const iconsOf = (list: [number, string][]) => [...new Set(list.map(([, icon]) => icon))].sort()
    t.same(iconsOf(shown.icons), ['images/icon-1.png', 'images/icon-2.png'], 'the icons that loaded drawn')
    t.same(iconsOf(shown.circles), ['images/icon-3.png', 'images/icon-4.png'], 'the others\' points as circles')
    const iconIds = new Set(shown.icons.map(([id]) => id))
    const circleIds = new Set(shown.circles.map(([id]) => id))
    t.ok((await pointsIn(shown.bbox)).every((id) => iconIds.has(id) !== circleIds.has(id)), 'every point of the view drawn, once')
    t.notOk(requested.some((url) => url.endsWith('/api/v1/icons/images/icon-4.png')), 'the image the dataset lacks: never asked for')
    t.same(errors, [], 'no console error')
    t.same(await axeFindings(page), [], 'axe')
  })

  await t.test('the icon helpers: the route\'s paths, KML\'s colour multiplied', async (t) => {
    const { page, errors } = await openPage(t)
    await page.goto(`${notesBase}/map?${view}`)
    await drawn(page)
    const results = await page.evaluate(async () => {
      const style = await import('/map/assets/style.js' as string)
      const pixels = new Uint8ClampedArray([255, 255, 255, 255, 10, 20, 30, 40])
      const white = new Uint8ClampedArray([1, 2, 3, 4])
      return {
        urls: ['images/icon-1.png', 'files/my icon#2.png', 'icon.png', 'https://example.org/a.png', 'root://icons/palette-3.png', '/abs.png', '../up.png', 'a//b.png', 'a\\b.png', ''].map((h) => style.iconUrl(h)),
        tinted: style.multiply(pixels, '#ff800080'),
        pixels: [...pixels],
        white: [style.multiply(white, '#FFFFFFFF'), ...white],
        parsed: style.parseIconId('kml-icon #ff800080 files/my icon.png')
      }
    })
    t.same(results.urls, ['/api/v1/icons/images/icon-1.png', '/api/v1/icons/files/my%20icon%232.png', '/api/v1/icons/icon.png', null, null, null, null, null, null, null])
    t.same([results.tinted, results.pixels], [true, [255, 128, 0, 128, 10, 10, 0, 20]], 'each channel multiplied by the colour\'s, alpha too')
    t.same(results.white, [false, 1, 2, 3, 4], 'white leaves the image as it is')
    t.same(results.parsed, { colour: '#ff800080', href: 'files/my icon.png' })
    t.same(errors, [], 'no console error')
  })
})
