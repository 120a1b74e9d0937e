import { drawnPoints, launchBrowser, mapIdle as idle } from '../test/support/browser.ts'

// The views the map goes through after its own first view (the whole dataset): into one city, panned at the end.
export const MAP_VIEWS: [name: string, lon: number, lat: number, zoom: number][] = [
  ['city', -0.12, 51.5, 6], ['district', -0.12, 51.5, 9], ['streets', -0.12, 51.5, 12.5], ['street', -0.1, 51.52, 15], ['panned', -0.05, 51.48, 15]
]

export interface MapViewFigure { view: string; zoom: number; ms: number; clusters: number; points: number; placemarks: number }
export interface MapLoadFigure { views: MapViewFigure[]; first_draw_ms: number; world_drawn: number; world_points: number; console_errors: string[] }

/**
 * The map page in Chromium (WebGL on the software renderer) over the served dataset: a cold load of
 * `/map`, whose first view is the whole dataset, then a jump to each view of MAP_VIEWS, each timed from
 * its start to every tile drawn. The first view's clusters and lone points must add up to the dataset's
 * points (`points`, from the API); every console error is returned.
 */
export async function mapLoadAtScale (base: string, points: number): Promise<MapLoadFigure> {
  const browser = await launchBrowser({ webgl: true })
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    const errors: string[] = []
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()) })
    page.on('pageerror', (e) => errors.push(e.message))
    const views: MapViewFigure[] = []
    const started = Date.now()
    await page.goto(`${base}/map`)
    await page.waitForFunction(() => (globalThis as any).placemarkMap !== undefined && document.querySelector('#status')?.getAttribute('data-state') === 'ready' &&
      document.querySelector('#status')?.getAttribute('data-drawn') === 'true', undefined, { timeout: 120_000 })
    await idle(page)
    const firstDraw = Date.now() - started
    const world = await drawnPoints(page)
    const zoom = await page.evaluate(() => Math.round((globalThis as any).placemarkMap.getZoom() * 100) / 100)
    views.push({ view: 'the whole dataset', zoom, ms: firstDraw, ...world })
    for (const [view, vLon, vLat, vZoom] of MAP_VIEWS) {
      const at = Date.now()
      await page.evaluate(([x, y, z]) => (globalThis as any).placemarkMap.jumpTo({ center: [x, y], zoom: z }), [vLon, vLat, vZoom])
      await idle(page)
      views.push({ view, zoom: vZoom, ms: Date.now() - at, ...(await drawnPoints(page)) })
    }
    return { views, first_draw_ms: firstDraw, world_drawn: world.placemarks, world_points: points, console_errors: errors }
  } finally {
    await browser.close()
  }
}
