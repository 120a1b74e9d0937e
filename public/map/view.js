/*
 * The view in the page's address: centre, zoom, folder, search words and time period, so that a link
 * opens the same map. `?lat=36.1&lon=-115.17&z=12.5&folder=Downtown&q=tropicana&datetime=2017-10-01T00:00:00Z/2017-10-02T00:00:00Z`.
 */

/**
 * @typedef {{ lat: number, lon: number, zoom: number } | null} Camera
 * @typedef {{ folder: string, q: string, datetime: string }} Filters
 * @typedef {{ camera: Camera, filters: Filters }} View
 */

const DATETIME = /^[0-9T:.+\-Z]{4,40}\/[0-9T:.+\-Z]{4,40}$/

/**
 * The view a query string holds; a missing or malformed part is left out.
 * @param {string} search
 * @returns {View}
 */
export function readView (search) {
  const params = new URLSearchParams(search)
  const lat = Number(params.get('lat'))
  const lon = Number(params.get('lon'))
  const zoom = Number(params.get('z'))
  const has = ['lat', 'lon', 'z'].every((name) => (params.get(name) ?? '').trim() !== '')
  const camera = has && Number.isFinite(lat) && Math.abs(lat) <= 85.06 && Number.isFinite(lon) && Math.abs(lon) <= 540 && Number.isFinite(zoom) && zoom >= 0 && zoom <= 22
    ? { lat, lon, zoom }
    : null
  const datetime = params.get('datetime') ?? ''
  return {
    camera,
    filters: {
      folder: (params.get('folder') ?? '').slice(0, 500),
      q: (params.get('q') ?? '').slice(0, 200),
      datetime: DATETIME.test(datetime) ? datetime : ''
    }
  }
}

/**
 * The query string of a view (five decimals of a degree is about a metre).
 * @param {{ lat: number, lon: number, zoom: number }} camera
 * @param {Filters} filters
 * @returns {string}
 */
export function writeView (camera, filters) {
  const params = new URLSearchParams()
  params.set('lat', camera.lat.toFixed(5))
  params.set('lon', camera.lon.toFixed(5))
  params.set('z', camera.zoom.toFixed(2))
  for (const name of /** @type {const} */ (['folder', 'q', 'datetime'])) if (filters[name]) params.set(name, filters[name])
  return '?' + params.toString()
}

/**
 * The filters as API query parameters (`folder`, `q`, `datetime`), empty ones left out.
 * @param {Filters} filters
 * @returns {URLSearchParams}
 */
export function filterParams (filters) {
  const params = new URLSearchParams()
  if (filters.folder) params.set('folder', filters.folder)
  if (filters.q.trim()) params.set('q', filters.q.trim())
  if (filters.datetime) params.set('datetime', filters.datetime)
  return params
}
