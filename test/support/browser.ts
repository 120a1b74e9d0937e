import { existsSync, readFileSync } from 'node:fs'
import { mkdir, rmdir, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'

// Where a machine usually has a Chromium of its own.
const systemBrowsers = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable']

/**
 * The Chromium the browser tests drive: CHROMIUM_PATH when set, else the system's, else the one the
 * @sparticuz/chromium dev dependency ships inside its npm package (unpacked once into the temporary
 * directory), so that `npm install` alone is enough.
 */
export async function chromiumPath (): Promise<string> {
  const configured = process.env.CHROMIUM_PATH
  if (configured) {
    if (!existsSync(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, which does not exist`)
    return configured
  }
  const system = systemBrowsers.find((path) => existsSync(path))
  if (system) return system
  return withUnpackLock(async () => {
    const { default: packaged } = await import('@sparticuz/chromium')
    return packaged.executablePath()
  })
}

// Test files run in parallel: one process unpacks while the others wait, so none runs a half-written file.
async function withUnpackLock<T> (fn: () => Promise<T>): Promise<T> {
  const lock = '/tmp/chromium-unpack.lock'
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      await mkdir(lock)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      // A lock left by a process that died while unpacking is taken over after a minute.
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs
      if (age > 60_000) await rmdir(lock).catch(() => {})
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  try {
    return await fn()
  } finally {
    await rmdir(lock).catch(() => {})
  }
}

// WebGL without a GPU: ANGLE on SwiftShader, the software renderer Chromium (and @sparticuz/chromium) ships.
const WEBGL_FLAGS = ['--use-gl=angle', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist']

/**
 * A headless Chromium with the flags a container needs; no web-security switches, so CSP and CORS hold.
 * `webgl: true` asks for WebGL on the software renderer (the map page draws with it) rather than leaving
 * it to Chromium's fallback.
 */
export async function launchBrowser (options: { webgl?: boolean } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: await chromiumPath(),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...(options.webgl ? WEBGL_FLAGS : [])]
  })
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's serious and critical findings on the page as it is (its script evaluated through the devtools protocol, outside the page's CSP). */
export async function axeFindings (page: Page): Promise<string[]> {
  if (!await page.evaluate(() => 'axe' in window)) await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe
    return (await axe.run(document, { resultTypes: ['violations'] })).violations
  })
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`)
}

/** The map page (`globalThis.placemarkMap`) still: its style and every tile of the view loaded, not moving. */
export const mapIdle = (page: Page): Promise<void> => page.evaluate(() => new Promise<void>((resolve) => {
  const map = (globalThis as any).placemarkMap
  if (map.loaded() && !map.isMoving()) resolve()
  else map.once('idle', () => resolve())
}))

/**
 * The clusters and lone points the map page draws in its view (circles or icons), each once: their count,
 * the Point placemarks they stand for (`placemarks`), the small lines and polygons its clusters of shapes
 * stand for (`shapes`), the cluster labels drawn, and the lines and polygons drawn as themselves (`drawnShapes`).
 */
export const drawnPoints = (page: Page) => page.evaluate(() => {
  const map = (globalThis as any).placemarkMap
  const seen = new Map<string, number>()
  for (const f of map.queryRenderedFeatures({ layers: ['clusters', 'points', 'icons'] })) {
    const cluster = f.properties.cluster === true
    const shapes = f.properties.shape_count !== undefined
    seen.set(cluster ? `c${shapes ? 's' : ''}${JSON.stringify(f.geometry.coordinates)}` : `p${f.id}`, cluster ? Number(f.properties.point_count ?? f.properties.shape_count) : 1)
  }
  const keys = [...seen.keys()]
  return {
    clusters: keys.filter((k) => k[0] === 'c').length,
    points: keys.filter((k) => k[0] === 'p').length,
    placemarks: [...seen.entries()].filter(([k]) => !k.startsWith('cs')).reduce((a, [, b]) => a + b, 0),
    shapes: [...seen.entries()].filter(([k]) => k.startsWith('cs')).reduce((a, [, b]) => a + b, 0),
    labels: map.queryRenderedFeatures({ layers: ['cluster-counts'] }).length as number,
    drawnShapes: new Set(map.queryRenderedFeatures({ layers: ['lines', 'polygons'] }).map((f: any) => f.id)).size
  }
})
