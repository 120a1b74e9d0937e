import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { contentSecurityPolicy, pageRoute, tileSource } from '../../plugins/external/security-headers.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const require = createRequire(import.meta.url)
// The packages' own distribution folders, served by this server: the page needs no CDN and works offline.
const maplibreDist = dirname(require.resolve('maplibre-gl/package.json')) + '/dist'
const dompurifyDist = dirname(require.resolve('dompurify/dist/purify.min.js'))

// The page's files, and the vendors' files it loads, named one by one: nothing else of the folders is served.
const PAGE_FILES = new Set(['/map.js', '/map.css', '/icon.svg', '/view.js', '/timebar.js', '/popup.js', '/style.js'])
const MAPLIBRE_FILES = new Set(['/maplibre-gl.mjs', '/maplibre-gl-worker.mjs', '/maplibre-gl.css', '/maplibre-gl.mjs.map', '/maplibre-gl-worker.mjs.map'])
const DOMPURIFY_FILES = new Set(['/purify.es.mjs', '/purify.es.mjs.map'])

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/**
 * The page: markup only. Its script (an ES module, which loads MapLibre GL JS and DOMPurify as modules
 * of this server) and its styles are same-origin files: nothing inline. The base map's settings travel
 * as data- attributes.
 */
function page (tileUrl: string, tileAttribution: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Placemark map</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/map/maplibre/maplibre-gl.css">
<link rel="stylesheet" href="/map/assets/map.css">
<link rel="modulepreload" href="/map/maplibre/maplibre-gl.mjs">
<script type="module" src="/map/assets/map.js"></script>
</head>
<body data-tile-url="${escapeAttribute(tileUrl)}" data-tile-attribution="${escapeAttribute(tileAttribution)}">
<a class="skip" href="#map">Skip to the map</a>
<header>
<h1>Placemarks</h1>
<form id="filters" role="search" aria-label="Filter the placemarks">
<label>Folder <select id="folder"><option value="">All folders</option></select></label>
<label>Search <input id="search" type="search" maxlength="200" autocomplete="off" placeholder="words in names or descriptions"></label>
</form>
<p id="status" role="status" data-state="loading">Loading…</p>
<nav aria-label="Export and documentation"><a id="export-geojson" href="/api/v1/placemarks?format=geojson" download>GeoJSON</a> <a id="export-kml" href="/api/v1/export.kml" download>KML</a> <a href="/api/docs">API docs</a></nav>
</header>
<main>
<div id="map" role="region" aria-label="Map of the placemarks" tabindex="-1"></div>
<p id="no-webgl" class="no-webgl" role="alert" hidden>This map needs WebGL, which this browser has turned off or does not offer. The placemarks are still yours to read:
<a href="/api/v1/placemarks?format=geojson" download>GeoJSON</a> or <a href="/api/v1/export.kml" download>KML</a> (for QGIS, Google Earth or any GIS), or the <a href="/api/docs">API</a>.</p>
<aside id="timebar" aria-label="Time">
<h2>Time</h2>
<p id="time-empty" hidden>No placemark has a KML time.</p>
<div id="time-control" hidden>
<svg id="histogram" role="img" aria-label="Placemarks per period" viewBox="0 0 300 60" preserveAspectRatio="none"></svg>
<label for="time">Period</label>
<input id="time" type="range" min="0" max="0" step="1" value="0">
<p id="time-label"><time id="time-value"></time> <button id="time-clear" type="button">All times</button></p>
<p id="time-zone"></p>
</div>
<h2>In this view</h2>
<ul id="visible" aria-label="Placemarks and clusters in this view"></ul>
</aside>
</main>
</body></html>`
}

/**
 * The map page's own Content-Security-Policy: the site's, with styles from this server only (nothing on
 * the page is inline), workers (MapLibre's, a module) from this server, and the base map's tiles, which
 * MapLibre fetches, as images and connections to their host only.
 */
export function mapPolicy (tileUrl: string | undefined): Record<string, string[]> {
  const base = contentSecurityPolicy(undefined).directives
  const tiles = tileSource(tileUrl)
  return {
    ...base,
    connectSrc: ["'self'", ...tiles],
    imgSrc: ["'self'", 'data:', ...tiles],
    styleSrc: ["'self'"],
    workerSrc: ["'self'"]
  }
}

/** `GET /map`: the placemarks on a map drawn from the vector tiles (MapLibre GL JS), not part of the API document. */
const map: FastifyPluginAsync = async (app) => {
  const html = page(app.config.MAP_TILE_URL ?? '', app.config.MAP_TILE_ATTRIBUTION ?? '')
  pageRoute(app, html, mapPolicy(app.config.MAP_TILE_URL))

  // Each folder in its own scope; reply.sendFile is not needed (swagger-ui's copy of the plugin keeps it undecorated too).
  await app.register(fastifyStatic, { root: join(root, 'public', 'map'), prefix: '/assets/', decorateReply: false, index: false, allowedPath: (path) => PAGE_FILES.has(path) })
  await app.register(fastifyStatic, { root: maplibreDist, prefix: '/maplibre/', decorateReply: false, index: false, allowedPath: (path) => MAPLIBRE_FILES.has(path) })
  await app.register(fastifyStatic, { root: dompurifyDist, prefix: '/vendor/', decorateReply: false, index: false, allowedPath: (path) => DOMPURIFY_FILES.has(path) })
}

export default map
