/*
 * The map's MapLibre style: the base map (raster tiles from MAP_TILE_URL, when set) under the placemarks'
 * vector tiles, drawn with their KML styles: a point's icon colour, a line's colour and width, a
 * polygon's fill and outline. A cluster is a circle of the colour most of its points share, its count
 * written on it. A placemark whose style says nothing takes the page's default colour.
 */

/** @typedef {import('maplibre-gl').StyleSpecification} StyleSpecification */
/** @typedef {import('maplibre-gl').LayerSpecification} LayerSpecification */
/** @typedef {import('maplibre-gl').ExpressionSpecification} Expression */

export const SOURCE = 'placemarks'
export const SOURCE_LAYER = 'placemarks'

// The layers a reader can click or pick from the list, top first.
export const CLUSTER_LAYER = 'clusters'
export const COUNT_LAYER = 'cluster-counts'
export const POINT_LAYER = 'points'
export const LINE_LAYER = 'lines'
export const FILL_LAYER = 'polygons'
export const OUTLINE_LAYER = 'polygon-outlines'
export const PICKABLE = [CLUSTER_LAYER, POINT_LAYER, LINE_LAYER, FILL_LAYER]

/** @typedef {{ dark: boolean }} Scheme */

const DEFAULT_POINT = '#d2452f'
const DEFAULT_LINE = '#1f5fbf'
const DEFAULT_FILL = '#2e8b5766'

/** A colour attribute (`#rrggbbaa`) as a colour, or the default when the attribute is absent or unreadable. */
const colour = (/** @type {string} */ attribute, /** @type {string} */ fallback) => /** @type {Expression} */ (['to-color', ['get', attribute], fallback])

const isCluster = /** @type {Expression} */ (['has', 'point_count'])

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
      filter: ['all', ['==', ['geometry-type'], 'Point'], ['!', isCluster]],
      paint: {
        'circle-radius': ['interpolate', ['linear'], ['zoom'], 2, 4, 14, 7],
        'circle-color': colour('color', DEFAULT_POINT),
        'circle-stroke-width': 1.5,
        'circle-stroke-color': halo
      }
    },
    {
      id: CLUSTER_LAYER,
      type: 'circle',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: isCluster,
      paint: {
        'circle-radius': ['interpolate', ['linear'], ['get', 'point_count'], 2, 11, 100, 16, 1000, 20, 100000, 28],
        'circle-color': colour('color', DEFAULT_POINT),
        'circle-opacity': 0.85,
        'circle-stroke-width': 2,
        'circle-stroke-color': halo
      }
    },
    {
      id: COUNT_LAYER,
      type: 'symbol',
      source: SOURCE,
      'source-layer': SOURCE_LAYER,
      filter: isCluster,
      layout: {
        'text-field': ['coalesce', ['get', 'point_count_abbreviated'], ['to-string', ['get', 'point_count']]],
        // No glyph server: MapLibre draws the digits with the browser's own sans-serif.
        'text-font': ['sans-serif'],
        'text-size': 12,
        'text-allow-overlap': true,
        'text-ignore-placement': true
      },
      paint: { 'text-color': '#ffffff', 'text-halo-color': '#000000a0', 'text-halo-width': 1.2 }
    }
  )
  return { version: 8, sources, layers }
}
