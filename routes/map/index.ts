import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const require = createRequire(import.meta.url)
// The packages' own distribution folders, served by this server: the page needs no CDN and works offline.
const leafletDist = dirname(require.resolve('leaflet/dist/leaflet.js'))
const dompurifyDist = dirname(require.resolve('dompurify/dist/purify.min.js'))

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/**
 * The page: markup only. Its script and styles are same-origin files (a strict Content-Security-Policy
 * holds: no inline script, style or event handler); the base-map settings travel as data- attributes.
 */
function page (tileUrl: string, tileAttribution: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Placemark map</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/map/leaflet/leaflet.css">
<link rel="stylesheet" href="/map/assets/map.css">
<script src="/map/leaflet/leaflet.js" defer></script>
<script src="/map/vendor/purify.min.js" defer></script>
<script src="/map/assets/map.js" defer></script>
</head>
<body data-tile-url="${escapeAttribute(tileUrl)}" data-tile-attribution="${escapeAttribute(tileAttribution)}">
<header>
<h1>Placemarks</h1>
<label>Folder <select id="folder"><option value="">All folders</option></select></label>
<label>Search <input id="search" type="search" maxlength="200" autocomplete="off" placeholder="words in names or descriptions"></label>
<p id="status" role="status" data-state="loading">Loading…</p>
<nav><a href="/api/docs">API docs</a></nav>
</header>
<main>
<div id="map" aria-label="Map of the placemarks in view"></div>
<aside id="timeline" aria-label="Timeline">
<h2>Timeline</h2>
<p id="time-empty" hidden>No placemark has a date in its name.</p>
<label id="time-control">Time <input id="time" type="range" min="0" max="0" step="1" value="0"></label>
<p id="time-label"></p>
<ol id="events"></ol>
</aside>
</main>
</body></html>`
}

/** `GET /map`: the placemarks of the current view on a map (Leaflet), not part of the API document. */
const map: FastifyPluginAsync = async (app) => {
  const html = page(app.config.MAP_TILE_URL ?? '', app.config.MAP_TILE_ATTRIBUTION ?? '')
  app.get('/', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(html))

  // Each folder in its own scope; reply.sendFile is not needed (swagger-ui's copy of the plugin keeps it undecorated too).
  await app.register(fastifyStatic, { root: join(root, 'public', 'map'), prefix: '/assets/', decorateReply: false, index: false })
  await app.register(fastifyStatic, { root: leafletDist, prefix: '/leaflet/', decorateReply: false, index: false })
  await app.register(fastifyStatic, {
    root: dompurifyDist,
    prefix: '/vendor/',
    decorateReply: false,
    index: false,
    allowedPath: (path) => path === '/purify.min.js' || path === '/purify.min.js.map'
  })
}

export default map
