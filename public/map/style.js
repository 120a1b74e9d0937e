/*
 * The map's MapLibre style: the base map (raster tiles from MAP_TILE_URL, when set) under the placemarks'
 * vector tiles, drawn with their KML styles: a point's icon (an image of the imported KMZ) or else a
 * circle of its icon colour, a line's colour and width, a polygon's fill and outline. A cluster of points
 * is a circle of the colour most of its points share, its count written on it. A cluster of lines and
 * polygons (each smaller than a grid cell at that zoom) is a small ring of their line colour where they
 * are, with its count on a smaller badge (the page's background, ringed in that colour) set off up and to
 * the right (`SHAPE_OFFSET`), so that a cell holding both kinds shows both counts side by side. A placemark
 * whose style says nothing takes the page's default colour.
 *
 * Icons: a point whose `icon` attribute is a plain relative href (`images/icon-1.png`, an image the KMZ
 * held, served at `/api/v1/icons/images/icon-1.png`) is drawn by the symbol layer `icons`, its image
 * named `kml-icon <color> <href>` and loaded by the page when a tile first needs it (map.js). An absolute
 * href (`https://…`, `root://…`: another origin, which the page's policy does not let it fetch) or none
 * leaves the point to the circle layer `points`, as does an icon that fails to load (`pointFilters`).
 * As in KML, the IconStyle colour multiplies the image's pixels (`multiply`); white, or no colour, draws
 * the image as it is.
 */

/** @typedef {import('maplibre-gl').StyleSpecification} StyleSpecification */
/** @typedef {import('maplibre-gl').LayerSpecification} LayerSpecification */
/** @typedef {import('maplibre-gl').ExpressionSpecification} Expression */

export const SOURCE = 'placemarks'
export const SOURCE_LAYER = 'placemarks'

// The layers a reader can click or pick from the list, top first.
export const CLUSTER_LAYER = 'clusters'
export const COUNT_LAYER = 'cluster-counts'
export const SHAPE_BADGE_LAYER = 'shape-cluster-badges'
export const POINT_LAYER = 'points'
export const ICON_LAYER = 'icons'
export const LINE_LAYER = 'lines'
export const FILL_LAYER = 'polygons'
export const OUTLINE_LAYER = 'polygon-outlines'
export const PICKABLE = [SHAPE_BADGE_LAYER, CLUSTER_LAYER, ICON_LAYER, POINT_LAYER, LINE_LAYER, FILL_LAYER]

/** @typedef {{ dark: boolean }} Scheme */

const DEFAULT_POINT = '#d2452f'
const DEFAULT_LINE = '#1f5fbf'
const DEFAULT_FILL = '#2e8b5766'

/** A colour attribute (`#rrggbbaa`) as a colour, or the default when the attribute is absent or unreadable. */
const colour = (/** @type {string} */ attribute, /** @type {string} */ fallback) => /** @type {Expression} */ (['to-color', ['get', attribute], fallback])

// A cluster of points (`point_count`) or of lines and polygons smaller than a grid cell (`shape_count`).
const isCluster = /** @type {Expression} */ (['has', 'cluster'])
const clusterCount = /** @type {Expression} */ (['coalesce', ['get', 'point_count'], ['get', 'shape_count']])
const isShapes = /** @type {Expression} */ (['has', 'shape_count'])

/**
 * Where a cluster of shapes' badge and count are drawn from its position, in CSS pixels (right, down):
 * a cell can hold a cluster of points and one of shapes a few pixels apart, and their counts would be
 * written over each other. Up and to the right, the badge's count clears the point cluster's (centred,
 * 12 px high) whatever its size, the badge over its edge. Clusters of points stay at their points' mean (held near their cell's centre).
 */
export const SHAPE_OFFSET = /** @type {[number, number]} */ ([15, -15])
const SHAPE_TEXT_SIZE = 10

// --- KML icons.

/** The prefix of an icon image's name: `kml-icon #rrggbbaa images/icon-1.png`. */
export const ICON_PREFIX = 'kml-icon '
const WHITE = '#ffffffff'
// An icon is drawn this many CSS pixels on its longer side at most (Google Earth's size at scale 1); a smaller image as it is.
export const ICON_PX = 32

const href = /** @type {Expression} */ (['coalesce', ['get', 'icon'], ''])
/** Whether a feature's icon may be one of the dataset's own images: a relative href (no scheme, no leading `/`, no backslash). */
const ownIcon = /** @type {Expression} */ (['all',
  ['!=', href, ''],
  ['==', ['index-of', ':', href], -1],
  ['!=', ['index-of', '/', href], 0],
  ['==', ['index-of', '\\', href], -1]
])

/**
 * The filters of the lone points' two layers: the icon layer draws the points with an icon of their own,
 * the circle layer every other (no icon, an external one, or one of `failed`, the hrefs that did not load).
 * @param {string[]} failed
 * @returns {{ icons: Expression, circles: Expression }}
 */
export function pointFilters (failed) {
  const point = /** @type {Expression} */ (['all', ['==', ['geometry-type'], 'Point'], ['!', isCluster]])
  const isFailed = /** @type {Expression} */ (['in', href, ['literal', failed]])
  return {
    icons: ['all', point, ownIcon, ['!', isFailed]],
    circles: ['all', point, ['any', ['!', ownIcon], isFailed]]
  }
}

/**
 * An icon image's name taken apart: the IconStyle colour (CSS `#rrggbbaa`) and the href; null for another image.
 * @param {string} id
 * @returns {{ colour: string, href: string } | null}
 */
export function parseIconId (id) {
  if (!id.startsWith(ICON_PREFIX)) return null
  const rest = id.slice(ICON_PREFIX.length)
  const space = rest.indexOf(' ')
  return space === -1 ? null : { colour: rest.slice(0, space), href: rest.slice(space + 1) }
}

/**
 * Where this server serves an icon's image (routes/api/v1/icons.ts: its path in the KMZ under
 * `/api/v1/icons/`), or null for an href that is not a plain relative path the route would take.
 * @param {string} iconHref
 * @returns {string | null}
 */
export function iconUrl (iconHref) {
  // eslint-disable-next-line no-control-regex
  if (iconHref.length === 0 || iconHref.length > 255 || /[\\:\u0000-\u001f\u007f]/.test(iconHref) || iconHref.startsWith('/')) return null
  const segments = iconHref.split('/')
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return null
  return `/api/v1/icons/${segments.map(encodeURIComponent).join('/')}`
}

/**
 * KML's IconStyle colour on an icon: each channel of each pixel (RGBA, not premultiplied) multiplied by
 * the colour's, as Google Earth draws it. Returns false, leaving the pixels alone, for white or a colour
 * that is not `#rrggbbaa`.
 * @param {Uint8ClampedArray} pixels
 * @param {string} colour
 */
export function multiply (pixels, colour) {
  if (!/^#[0-9a-f]{8}$/i.test(colour) || colour.toLowerCase() === WHITE) return false
  const factors = [1, 3, 5, 7].map((i) => parseInt(colour.slice(i, i + 2), 16) / 255)
  for (let i = 0; i < pixels.length; i++) pixels[i] = pixels[i] * factors[i % 4]
  return true
}

/**
 * The tile URL template of a raster base map as MapLibre reads it: Leaflet's `{s}` subdomains spelled out.
 * @param {string} template
 * @returns {string[]}
 */
export function baseTiles (template) {
  return template.includes('{s}') ? ['a', 'b', 'c'].map((s) => template.replace('{s}', s)) : [template]
}

/**
 * @param {{ tiles: string, baseTiles: string[], attribution: string, scheme: Scheme }} options
 * @returns {StyleSpecification}
 */
export function mapStyle ({ tiles, baseTiles, attribution, scheme }) {
  const halo = scheme.dark ? '#10151b' : '#ffffff'
  const filters = pointFilters([])
  /** @type {StyleSpecification['sources']} */
  const sources = {
    [SOURCE]: { type: 'vector', tiles: [tiles], minzoom: 0, maxzoom: 22 }
  }
  /** @type {LayerSpecification[]} */
  const layers = [{ id: 'background', type: 'background', paint: { 'background-color': scheme.dark ? '#1b2129' : '#eef1f4' } }]
  if (baseTiles.length) {
    sources.base = { type: 'raster', tiles: baseTiles, tileSize: 256, maxzoom: 19, attribution }
    layers.push({ id: 'base', type: 'raster', source: 'base', paint: scheme.dark ? { 'raster-brightness-max': 0.75, 'raster-saturation': -0.3 } : {} })
  }
  layers.push(
    {
      id: FILL_LAYER,
      type: 'fill',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: ['==', ['geometry-type'], 'Polygon'],
      paint: { 'fill-color': colour('fill', DEFAULT_FILL) }
    },
    {
      id: OUTLINE_LAYER,
      type: 'line',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: ['==', ['geometry-type'], 'Polygon'],
      paint: { 'line-color': colour('color', DEFAULT_LINE), 'line-width': ['coalesce', ['get', 'width'], 1] }
    },
    {
      id: LINE_LAYER,
      type: 'line',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: ['==', ['geometry-type'], 'LineString'],
      layout: { 'line-cap': 'round', 'line-join': 'round' },
      // A hairline of a KML width is still something a finger can reach.
      paint: { 'line-color': colour('color', DEFAULT_LINE), 'line-width': ['max', ['coalesce', ['get', 'width'], 2], 1.5] }
    },
    {
      id: POINT_LAYER,
      type: 'circle',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: filters.circles,
      paint: {
        'circle-radius': ['interpolate', ['linear'], ['zoom'], 2, 4, 14, 7],
        'circle-color': colour('color', DEFAULT_POINT),
        'circle-stroke-width': 1.5,
        'circle-stroke-color': halo
      }
    },
    {
      id: ICON_LAYER,
      type: 'symbol',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: filters.icons,
      layout: {
        'icon-image': ['concat', ICON_PREFIX, ['coalesce', ['get', 'color'], WHITE], ' ', href],
        'icon-size': ['interpolate', ['linear'], ['zoom'], 2, 0.6, 12, 1],
        // Every point drawn, as its circle would be: none hides another.
        'icon-allow-overlap': true,
        'icon-ignore-placement': true
      }
    },
    {
      // Both kinds, each at its position: a cluster of points as its circle, one of shapes as a small ring under them.
      id: CLUSTER_LAYER,
      type: 'circle',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: isCluster,
      layout: { 'circle-sort-key': ['case', isShapes, 0, 1] },
      paint: {
        // At most 12 px: a cluster is drawn within the middle quarter of its 32 px cell (CLUSTER_DRIFT on the
        // server), so that neighbours stay 24 px apart and their circles never cover each other.
        'circle-radius': ['case', isShapes, 2.5, ['interpolate', ['linear'], clusterCount, 2, 9, 100, 10.5, 1000, 11.5, 100000, 12]],
        'circle-color': ['case', isShapes, halo, colour('color', DEFAULT_POINT)],
        'circle-opacity': ['case', isShapes, 1, 0.85],
        'circle-stroke-width': 2,
        'circle-stroke-color': ['case', isShapes, colour('color', DEFAULT_LINE), halo]
      }
    },
    {
      // A cluster of shapes' badge, off its ring by SHAPE_OFFSET: smaller than a cluster of points, the page's background ringed in the shapes' line colour.
      id: SHAPE_BADGE_LAYER,
      type: 'circle',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: ['all', isCluster, isShapes],
      paint: {
        'circle-radius': ['interpolate', ['linear'], clusterCount, 2, 8, 100, 9, 1000, 10, 100000, 11],
        'circle-color': halo,
        'circle-stroke-width': 2.5,
        'circle-stroke-color': colour('color', DEFAULT_LINE),
        'circle-translate': SHAPE_OFFSET,
        // The same pixels as its count's text-offset, which turns with the text, not with the map.
        'circle-translate-anchor': 'viewport'
      }
    },
    {
      id: COUNT_LAYER,
      type: 'symbol',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: isCluster,
      layout: {
        'text-field': ['coalesce', ['get', 'point_count_abbreviated'], ['get', 'shape_count_abbreviated'], ['to-string', clusterCount]],
        // No glyph server: MapLibre draws the digits with the browser's own sans-serif.
        'text-font': ['sans-serif'],
        // Four characters (`1.2k`, `833k`) within a 24 px circle.
        'text-size': ['case', isShapes, SHAPE_TEXT_SIZE, ['>=', clusterCount, 1000], 11, 12],
        // In ems of the text's size: a cluster of shapes' count on its badge.
        'text-offset': ['case', isShapes, ['literal', SHAPE_OFFSET.map((px) => px / SHAPE_TEXT_SIZE)], ['literal', [0, 0]]],
        'text-allow-overlap': true,
        'text-ignore-placement': true,
        // Where a badge's count still meets another cluster's, the points' count is drawn over it.
        'symbol-sort-key': ['case', isShapes, 0, 1]
      },
      paint: {
        'text-color': ['case', isShapes, scheme.dark ? '#e8eaed' : '#1d1d1f', '#ffffff'],
        'text-halo-color': ['case', isShapes, halo, '#000000a0'],
        'text-halo-width': 1.2
      }
    }
  )
  return { version: 8, sources, layers }
}
