/*
 * The map page: the dataset drawn from the server's vector tiles with MapLibre GL JS, clusters with
 * their counts, each placemark in its KML style. The folder filter, the search box and the time bar
 * filter the tiles themselves (the tile URL's `folder`, `q` and `datetime`, read from the TileJSON)
 * and mean the dataset, not the view: the page says how many placemarks match in all (the OGC items'
 * numberMatched) and moves to them. The address holds the view. Runs under a strict
 * Content-Security-Policy: no inline script or style, MapLibre's worker a module of this server, images
 * and connections to this origin (and the base map's) only: a KML icon is fetched from this server's
 * `/api/v1/icons/` or not at all.
 */
import { CLUSTER_LAYER, FILL_LAYER, ICON_LAYER, ICON_PX, LINE_LAYER, PICKABLE, POINT_LAYER, SHAPE_BADGE_LAYER, SOURCE, baseTiles, iconUrl, mapStyle, multiply, parseIconId, pointFilters } from './style.js'
import { filterParams, readView, writeView } from './view.js'
import { TimeBar, timeFormats } from './timebar.js'
import { configurePurifier, popupContent, sanitize } from './popup.js'

/**
 * @typedef {typeof import('maplibre-gl')} MapLibre
 * @typedef {import('maplibre-gl').Map} MapLibreMap
 * @typedef {import('maplibre-gl').MapGeoJSONFeature} RenderedFeature
 * @typedef {import('maplibre-gl').LngLatBoundsLike} Bounds
 * @typedef {import('./view.js').Filters} Filters
 * @typedef {import('./popup.js').Placemark} Placemark
 * @typedef {{ tiles: string[], bounds?: number[] }} TileJson
 * @typedef {{ numberMatched?: number, features: { geometry: { type: string, coordinates: unknown } | null }[] }} Items
 */

// Vendors' ES modules, served by this server (routes/map/index.ts).
const MAPLIBRE_URL = '/map/maplibre/maplibre-gl.mjs'
const DOMPURIFY_URL = '/map/vendor/purify.es.mjs'
// The first matches a filter reads to find where they are: exact up to this many.
const EXTENT_SAMPLE = 1000
// The most placemarks an export link asks for (the OGC items' largest page).
const EXPORT_LIMIT = 10000
const LIST_MAX = 50

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id))
const statusEl = $('status')
const folderSelect = /** @type {HTMLSelectElement} */ ($('folder'))
const searchInput = /** @type {HTMLInputElement} */ ($('search'))
const exportGeoJson = /** @type {HTMLAnchorElement} */ ($('export-geojson'))
const exportKml = /** @type {HTMLAnchorElement} */ ($('export-kml'))
const visibleList = $('visible')

/**
 * @param {string} state loading, ready, error or unsupported
 * @param {string} text
 * @param {Record<string, string>} [data]
 */
function setStatus (state, text, data = {}) {
  statusEl.dataset.state = state
  statusEl.textContent = text
  Object.assign(statusEl.dataset, data)
}

/**
 * A JSON answer, or an Error with the API's message.
 * @param {string} url
 * @param {AbortSignal} [signal]
 * @returns {Promise<any>}
 */
async function getJson (url, signal) {
  const res = await fetch(url, { headers: { accept: 'application/json' }, signal })
  const body = await res.json().catch(() => ({}))
  if (!res.ok) throw new Error(body.message || `${res.status} ${res.statusText}`)
  return body
}

const plural = (/** @type {number} */ n, /** @type {string} */ word) => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`

/**
 * The export links for these filters and, when the view is not the whole world, this box.
 * @param {Filters} filters
 * @param {string | null} bbox
 */
function exportLinks (filters, bbox) {
  const params = filterParams(filters)
  const kml = new URLSearchParams(params)
  if (bbox) {
    params.set('bbox', bbox)
    kml.set('bbox', bbox)
  }
  params.set('limit', String(EXPORT_LIMIT))
  return { geojson: `/ogc/collections/placemarks/items?${params}`, kml: `/api/v1/export.kml${kml.size ? `?${kml}` : ''}` }
}

function hasWebGl2 () {
  try {
    return Boolean(document.createElement('canvas').getContext('webgl2'))
  } catch {
    return false
  }
}

/** Where WebGL is missing: a message with the data's links, not a blank page. */
function noWebGl () {
  const view = readView(location.search)
  const links = exportLinks(view.filters, null)
  const message = $('no-webgl')
  const [geojson, kml] = message.querySelectorAll('a')
  geojson.href = links.geojson
  kml.href = links.kml
  message.hidden = false
  $('map').hidden = true
  $('timebar').hidden = true
  setStatus('unsupported', 'This browser cannot draw the map (no WebGL): download the placemarks instead.')
}

/**
 * The bounds of the features' coordinates, or null.
 * @param {Items['features']} features
 * @returns {[number, number, number, number] | null}
 */
function boundsOf (features) {
  let west = Infinity
  let south = Infinity
  let east = -Infinity
  let north = -Infinity
  /** @param {unknown} c */
  const visit = (c) => {
    if (!Array.isArray(c)) return
    if (typeof c[0] === 'number' && typeof c[1] === 'number') {
      west = Math.min(west, c[0])
      east = Math.max(east, c[0])
      south = Math.min(south, c[1])
      north = Math.max(north, c[1])
      return
    }
    for (const inner of c) visit(inner)
  }
  for (const f of features) if (f.geometry) visit(f.geometry.coordinates)
  return Number.isFinite(west) ? [west, Math.max(south, -85), east, Math.min(north, 85)] : null
}

/**
 * A position of a line or polygon to open its popup at: its first vertex.
 * @param {import('geojson').Geometry} geometry
 * @returns {[number, number]}
 */
function firstPosition (geometry) {
  /** @type {unknown} */
  let c = 'coordinates' in geometry ? geometry.coordinates : [0, 0]
  while (Array.isArray(c) && Array.isArray(c[0])) c = c[0]
  return /** @type {[number, number]} */ (c)
}

/**
 * A tile URL template from a TileJSON, on this page's origin (the TileJSON's is PUBLIC_URL's, which a
 * proxy or a test may put elsewhere).
 * @param {TileJson} tileJson
 */
const tileTemplate = (tileJson) => location.origin + tileJson.tiles[0].replace(/^https?:\/\/[^/]+/i, '')

/**
 * The points' KML icons (style.js): MapLibre asks for an icon's image when a tile first draws it, and
 * waits for it. The image comes from this server (`/api/v1/icons/<its path in the KMZ>`, through
 * map.loadImage: a fetch and createImageBitmap, which the page's policy allows), once per href, and is
 * added multiplied by the IconStyle colour, at most ICON_PX CSS pixels on its longer side. An href that is not a plain
 * relative path or not among the dataset's images (GET /api/v1/icons: not asked for), or whose image does
 * not load (not an image), leaves its points to the circle layer, without an error.
 * @param {MapLibreMap} map
 */
function kmlIcons (map) {
  /** @type {Map<string, Promise<HTMLImageElement | ImageBitmap | null>>} */
  const images = new Map()
  /** @type {Set<string>} */
  const failed = new Set()
  // The dataset's images (GET /api/v1/icons): an href the KMZ did not hold is not asked for.
  /** @type {Promise<Set<string>>} */
  const stored = fetch('/api/v1/icons')
    .then((res) => (res.ok ? res.json() : { icons: [] }))
    .then((/** @type {{ icons: { name: string }[] }} */ body) => new Set(body.icons.map((icon) => icon.name)), () => new Set())

  /** @param {string} href */
  function load (href) {
    let image = images.get(href)
    if (!image) {
      const url = iconUrl(href)
      image = stored.then((names) => (url && names.has(href) ? map.loadImage(url).then((response) => response.data ?? null, () => null) : null))
      images.set(href, image)
    }
    return image
  }

  /**
   * The image as MapLibre takes it: as it is, or its pixels multiplied by the IconStyle colour.
   * @param {HTMLImageElement | ImageBitmap} image
   * @param {string} colour
   */
  function tinted (image, colour) {
    const canvas = document.createElement('canvas')
    canvas.width = image.width
    canvas.height = image.height
    const context = canvas.getContext('2d', { willReadFrequently: true })
    if (!context) return image
    context.drawImage(image, 0, 0)
    const pixels = context.getImageData(0, 0, image.width, image.height)
    return multiply(pixels.data, colour) ? pixels : image
  }

  map.setMissingStyleImageResolver(async (id) => {
    const icon = parseIconId(id)
    if (!icon) return
    const image = await load(icon.href)
    if (map.hasImage(id)) return
    if (image && image.width > 0 && image.height > 0) {
      const pixelRatio = Math.max(1, Math.max(image.width, image.height) / ICON_PX)
      map.addImage(id, /^#ffffffff$/i.test(icon.colour) ? image : tinted(image, icon.colour), { pixelRatio })
      return
    }
    // A transparent pixel answers this tile (MapLibre would warn of an image never added), and the
    // points of this href move to the circle layer.
    map.addImage(id, { width: 1, height: 1, data: new Uint8Array(4) })
    if (failed.has(icon.href)) return
    failed.add(icon.href)
    const filters = pointFilters([...failed])
    map.setFilter(ICON_LAYER, filters.icons)
    map.setFilter(POINT_LAYER, filters.circles)
  })
}

async function start () {
  if (!hasWebGl2()) return noWebGl()
  setStatus('loading', 'Loading the map…')
  const view = readView(location.search)
  /** @type {Filters} */
  const filters = { ...view.filters }
  const [maplibregl, purifierModule, tileJson, stats, folders, collection] = await Promise.all([
    /** @type {Promise<MapLibre>} */ (import(MAPLIBRE_URL)),
    /** @type {Promise<{ default: import('./popup.js').Purifier }>} */ (import(DOMPURIFY_URL)),
    /** @type {Promise<TileJson>} */ (getJson(`/api/v1/tiles.json?${filterParams(filters)}`)),
    getJson('/api/v1/stats'),
    getJson('/api/v1/folders').catch(() => ({ folders: [] })),
    getJson('/ogc/collections/placemarks').catch(() => ({}))
  ])
  const purifier = purifierModule.default
  configurePurifier(purifier)

  // The dataset's own time zone when the API tells it; UTC otherwise.
  const formats = timeFormats(typeof stats.timezone === 'string' ? stats.timezone : 'UTC')
  const total = Number(stats.total_placemarks) || 0
  for (const name of /** @type {string[]} */ (folders.folders)) folderSelect.append(new Option(name, name))
  if (filters.folder && !(/** @type {string[]} */ (folders.folders)).includes(filters.folder)) folderSelect.append(new Option(filters.folder, filters.folder))
  folderSelect.value = filters.folder
  searchInput.value = filters.q

  const body = document.body
  const dark = matchMedia('(prefers-color-scheme: dark)')
  const style = mapStyle({
    tiles: tileTemplate(tileJson),
    baseTiles: body.dataset.tileUrl ? baseTiles(body.dataset.tileUrl) : [],
    attribution: sanitize(purifier, body.dataset.tileAttribution || ''),
    scheme: { dark: dark.matches }
  })
  const [west, south, east, north] = tileJson.bounds ?? [-180, -85, 180, 85]
  /** @type {MapLibreMap} */
  let map
  try {
    map = new maplibregl.Map({
      container: 'map',
      style,
      ...(view.camera
        ? { center: [view.camera.lon, view.camera.lat], zoom: view.camera.zoom }
        : { bounds: [[west, Math.max(south, -85)], [east, Math.min(north, 85)]], fitBoundsOptions: { padding: 32, maxZoom: 16 } }),
      maxZoom: 22,
      attributionControl: { compact: false },
      dragRotate: false,
      pitchWithRotate: false,
      fadeDuration: 0
    })
  } catch (err) {
    console.warn('the map could not start', err)
    return noWebGl()
  }
  // For scripts driving the page (and its tests): the MapLibre map.
  Object.assign(globalThis, { placemarkMap: map })
  map.addControl(new maplibregl.NavigationControl({ showCompass: false }), 'top-left')
  map.addControl(new maplibregl.ScaleControl({}), 'bottom-left')
  map.touchZoomRotate.disableRotation()
  map.keyboard.disableRotation()
  kmlIcons(map)
  dark.addEventListener('change', () => map.setPaintProperty('background', 'background-color', dark.matches ? '#1b2129' : '#eef1f4'))

  const timeBar = new TimeBar({
    slider: /** @type {HTMLInputElement} */ ($('time')),
    histogram: /** @type {SVGSVGElement} */ (/** @type {unknown} */ ($('histogram'))),
    value: /** @type {HTMLTimeElement} */ ($('time-value')),
    clear: /** @type {HTMLButtonElement} */ ($('time-clear')),
    zoneNote: $('time-zone'),
    control: $('time-control'),
    empty: $('time-empty'),
    formats,
    onChange: (datetime) => { void applyFilters({ ...filters, datetime }, false) }
  })
  const temporal = collection?.extent?.temporal?.interval?.[0] ?? null
  timeBar.setExtent(temporal, filters.datetime)
  if (filters.datetime && timeBar.datetime !== filters.datetime) filters.datetime = ''

  // --- The view in the address, and the export links for what is shown.
  function viewBbox () {
    const b = map.getBounds()
    if (b.getEast() - b.getWest() >= 360) return null
    const wrap = (/** @type {number} */ lon) => ((((lon + 180) % 360) + 360) % 360) - 180
    const round = (/** @type {number} */ x) => Math.round(x * 1e5) / 1e5
    return [wrap(b.getWest()), Math.max(-90, b.getSouth()), wrap(b.getEast()), Math.min(90, b.getNorth())].map(round).join(',')
  }
  function remember () {
    const c = map.getCenter()
    const search = writeView({ lat: c.lat, lon: c.lng, zoom: map.getZoom() }, filters)
    if (search !== location.search) history.replaceState(null, '', location.pathname + search)
    const links = exportLinks(filters, viewBbox())
    exportGeoJson.href = links.geojson
    exportKml.href = links.kml
  }

  // --- Filters: the tiles, the count in all, and the matches' place.
  let drawnTiles = style.sources[SOURCE].type === 'vector' ? style.sources[SOURCE].tiles?.[0] : undefined
  let generation = 0
  /** @type {AbortController | null} */
  let pending = null
  /**
   * @param {Filters} next
   * @param {boolean} move whether to move the view to the matches (a new folder or search)
   */
  async function applyFilters (next, move) {
    const own = ++generation
    pending?.abort()
    const controller = pending = new AbortController()
    const histogramChanged = next.folder !== filters.folder || next.q !== filters.q
    Object.assign(filters, next)
    remember()
    setStatus('loading', 'Filtering…')
    try {
      const params = filterParams(filters)
      const [tiles, items] = await Promise.all([
        /** @type {Promise<TileJson>} */ (getJson(`/api/v1/tiles.json?${params}`, controller.signal)),
        /** @type {Promise<Items>} */ (getJson(`/ogc/collections/placemarks/items?${params}&limit=${move ? EXTENT_SAMPLE : 1}`, controller.signal))
      ])
      if (own !== generation) return
      const source = /** @type {import('maplibre-gl').VectorTileSource | undefined} */ (map.getSource(SOURCE))
      // `data-drawn` says when the map shows these filters' tiles.
      statusEl.dataset.drawn = 'false'
      const template = tileTemplate(tiles)
      if (template !== drawnTiles) source?.setTiles([template])
      drawnTiles = template
      const matched = items.numberMatched ?? items.features.length
      if (move && matched > 0) {
        const box = boundsOf(items.features)
        if (box) map.fitBounds([[box[0], box[1]], [box[2], box[3]]], { padding: 48, maxZoom: 16, duration: 0 })
      }
      showCount(matched)
      settled(own)
      if (histogramChanged) void timeBar.load(histogramOf(filters), filterParams({ ...filters, datetime: '' }).toString())
    } catch (err) {
      if (/** @type {Error} */ (err).name === 'AbortError' || own !== generation) return
      setStatus('error', `Could not filter the placemarks: ${/** @type {Error} */ (err).message}`, { count: '0' })
    }
  }

  /**
   * Marks the map drawn once its tiles for these filters are in and it stands still.
   * @param {number} own the filters' generation
   */
  function settled (own) {
    if (own !== generation) return
    if (map.loaded() && map.areTilesLoaded() && !map.isMoving()) statusEl.dataset.drawn = 'true'
    else setTimeout(() => settled(own), 100)
  }

  /** @param {number} matched */
  function showCount (matched) {
    const parts = []
    if (filters.folder) parts.push(`in “${filters.folder}”`)
    if (filters.q.trim()) parts.push(`matching “${filters.q.trim()}”`)
    if (filters.datetime) {
      const [from, to] = filters.datetime.split('/')
      parts.push(`between ${formats.short(Date.parse(from))} and ${formats.short(Date.parse(to))}`)
    }
    const text = parts.length
      ? `${plural(matched, 'placemark')} ${parts.join(' ')}, of ${plural(total, 'placemark')} in all`
      : `${plural(total, 'placemark')} in all`
    setStatus('ready', matched === 0 && parts.length ? `No placemark ${parts.join(' ')}` : text, { count: String(parts.length ? matched : total), total: String(total) })
  }

  /**
   * How many placemarks each period holds under these filters, in one request (/api/v1/time-histogram:
   * per period the OGC items' numberMatched).
   * @param {Filters} f
   */
  function histogramOf (f) {
    const base = filterParams({ ...f, datetime: '' })
    return async (/** @type {number} */ start, /** @type {number} */ step, /** @type {number} */ bins) => {
      const params = new URLSearchParams(base)
      params.set('start', new Date(start).toISOString())
      params.set('step', String(step))
      params.set('bins', String(bins))
      const answer = /** @type {{ counts: number[] }} */ (await getJson(`/api/v1/time-histogram?${params}`))
      return answer.counts
    }
  }

  folderSelect.addEventListener('change', () => { void applyFilters({ ...filters, folder: folderSelect.value }, Boolean(folderSelect.value)) })
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let searchTimer
  searchInput.addEventListener('input', () => {
    clearTimeout(searchTimer)
    searchTimer = setTimeout(() => {
      if (searchInput.value.trim() === filters.q.trim()) return
      void applyFilters({ ...filters, q: searchInput.value }, Boolean(searchInput.value.trim()))
    }, 350)
  })
  $('filters').addEventListener('submit', (event) => event.preventDefault())

  // --- Popups: a placemark's details, read from the API when opened; a cluster zooms in.
  /** @type {import('maplibre-gl').Popup | null} */
  let popup = null
  /**
   * @param {number} id
   * @param {import('maplibre-gl').LngLatLike} at
   */
  async function openPopup (id, at) {
    // The focus goes back where it came from when the popup closes.
    const opener = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null
    try {
      const placemark = /** @type {Placemark} */ (await getJson(`/api/v1/placemarks/${id}`))
      popup?.remove()
      const content = popupContent(placemark, { purifier, timeElement: (iso) => formats.element(iso) })
      popup = new maplibregl.Popup({ maxWidth: '340px', focusAfterOpen: true, closeOnClick: true })
        .setLngLat(at)
        .setDOMContent(content)
        .addTo(map)
      const element = popup.getElement()
      element.setAttribute('role', 'dialog')
      element.setAttribute('aria-labelledby', `popup-title-${id}`)
      element.dataset.id = String(id)
      const own = popup
      element.addEventListener('keydown', (event) => { if (event.key === 'Escape') own.remove() })
      own.on('close', () => {
        if (opener?.isConnected && (!document.activeElement || document.activeElement === document.body || element.contains(document.activeElement))) opener.focus()
      })
    } catch (err) {
      setStatus('error', `Could not read placemark ${id}: ${/** @type {Error} */ (err).message}`)
    }
  }

  /** @param {RenderedFeature} feature */
  function zoomInto (feature) {
    const [lon, lat] = /** @type {[number, number]} */ (/** @type {import('geojson').Point} */ (feature.geometry).coordinates)
    map.easeTo({ center: [lon, lat], zoom: Math.min(map.getZoom() + 2, 22) })
  }

  // A cluster of shapes answers on its badge too (drawn off its position); one handler, so one zoom: the top feature's.
  map.on('click', [SHAPE_BADGE_LAYER, CLUSTER_LAYER], (e) => { if (e.features?.[0]) zoomInto(e.features[0]) })
  for (const layer of [ICON_LAYER, POINT_LAYER, LINE_LAYER, FILL_LAYER]) {
    map.on('click', layer, (e) => {
      const feature = e.features?.[0]
      if (!feature || feature.properties.cluster) return
      const at = feature.geometry.type === 'Point' ? /** @type {[number, number]} */ (feature.geometry.coordinates) : e.lngLat
      void openPopup(Number(feature.id ?? feature.properties.id), at)
    })
  }
  for (const layer of PICKABLE) {
    map.on('mouseenter', layer, () => { map.getCanvas().style.cursor = 'pointer' })
    map.on('mouseleave', layer, () => { map.getCanvas().style.cursor = '' })
  }

  // --- What the view holds, as a list a keyboard can reach: each opens its popup, a cluster zooms in.
  /** How many placemarks a cluster holds (points, or lines and polygons). @param {RenderedFeature} f */
  const clusterSize = (f) => Number(f.properties.point_count ?? f.properties.shape_count)
  let listed = ''
  function listVisible () {
    const seen = new Set()
    /** @type {RenderedFeature[]} */
    const features = []
    for (const f of map.queryRenderedFeatures({ layers: PICKABLE })) {
      const key = f.properties.cluster ? `c${JSON.stringify(/** @type {import('geojson').Point} */ (f.geometry).coordinates)}` : `p${f.id ?? f.properties.id}`
      if (seen.has(key)) continue
      seen.add(key)
      features.push(f)
    }
    const clusters = features.filter((f) => f.properties.cluster).sort((a, b) => clusterSize(b) - clusterSize(a))
    const placemarks = features.filter((f) => !f.properties.cluster).sort((a, b) => String(a.properties.name).localeCompare(String(b.properties.name)))
    const shown = [...clusters, ...placemarks].slice(0, LIST_MAX)
    const key = shown.map((f) => f.properties.cluster ? `c${clusterSize(f)}@${JSON.stringify(/** @type {import('geojson').Point} */ (f.geometry).coordinates)}` : `p${f.id ?? f.properties.id}`).join(',')
    if (key === listed) return
    listed = key
    // A keyboard reader who zoomed into a cluster from the list stays in the list.
    const hadFocus = visibleList.contains(document.activeElement)
    visibleList.replaceChildren()
    for (const f of shown) {
      const item = document.createElement('li')
      const button = document.createElement('button')
      button.type = 'button'
      if (f.properties.cluster) {
        button.className = 'cluster'
        button.textContent = f.properties.point_count !== undefined
          ? `A cluster of ${plural(clusterSize(f), 'placemark')}: zoom in`
          : `A cluster of ${clusterSize(f).toLocaleString('en')} small lines and polygons: zoom in`
        button.addEventListener('click', () => zoomInto(f))
      } else {
        button.textContent = String(f.properties.name || '(no name)')
        const folder = f.properties.folder ? ` (${f.properties.folder})` : ''
        if (folder) button.append(Object.assign(document.createElement('span'), { className: 'folder', textContent: folder }))
        button.addEventListener('click', () => {
          const at = f.geometry.type === 'Point' ? /** @type {[number, number]} */ (f.geometry.coordinates) : firstPosition(f.geometry)
          void openPopup(Number(f.id ?? f.properties.id), at)
        })
      }
      item.append(button)
      visibleList.append(item)
    }
    const more = clusters.length + placemarks.length - shown.length
    if (more > 0) {
      const item = document.createElement('li')
      item.className = 'more'
      item.textContent = `and ${plural(more, 'more')}: zoom in to list them`
      visibleList.append(item)
    }
    if (hadFocus) visibleList.querySelector('button')?.focus()
  }

  map.on('moveend', remember)
  map.on('idle', listVisible)
  let baseMapFailed = false
  map.on('error', (e) => {
    const err = /** @type {Error & { status?: number }} */ (e.error)
    if (err?.name === 'AbortError') return
    // The base map is a backdrop: offline, or its server down, the placemarks are still all there.
    if (/** @type {{ sourceId?: string }} */ (e).sourceId === 'base') {
      if (!baseMapFailed) console.warn('the base map could not be loaded:', err?.message)
      baseMapFailed = true
      return
    }
    console.error('map:', err?.message ?? e)
    setStatus('error', `Part of the map could not be drawn: ${err?.message ?? 'unknown error'}`)
  })
  map.on('load', () => {
    remember()
    void applyFilters({ ...filters }, !view.camera && Boolean(filters.folder || filters.q.trim()))
    void timeBar.load(histogramOf(filters), filterParams({ ...filters, datetime: '' }).toString())
  })
}

start().catch((err) => {
  console.error(err)
  setStatus('error', `The map could not start: ${err.message}`)
})
