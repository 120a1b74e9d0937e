// The pure parts of the bench at scale (`npm run bench -- --scale 1m`): sizes and their labels, the
// boxes whose answers are compared before timing, the envelopes the PostGIS peer queries, the comparison
// of two answers' placemark ids, percentiles, /proc's memory lines and the random tiles asked for.

import { tileOf, type TileXYZ } from '../lib/geo/tiles.ts'

/** A box as the API takes it: `min_lon > max_lon` crosses the antimeridian. */
export interface BboxParams { min_lon: number; min_lat: number; max_lon: number; max_lat: number; limit: number }

/** Envelopes in PostGIS's order: [xmin, ymin, xmax, ymax]. */
export type Envelope = [number, number, number, number]

/** A placemark count from `--scale`: `1m`, `10m`, `250k` or a plain integer; null when it is none of these. */
export function parseScale (text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(text.trim())
  if (!m) return null
  const n = Math.round(Number(m[1]) * (m[2].toLowerCase() === 'm' ? 1_000_000 : m[2].toLowerCase() === 'k' ? 1000 : 1))
  return Number.isSafeInteger(n) && n >= 1 ? n : null
}

/** How a placemark count is named in figure names: 1M, 10M, 100k, or the number itself. */
export function scaleLabel (n: number): string {
  if (n % 1_000_000 === 0) return `${n / 1_000_000}M`
  if (n % 1000 === 0) return `${n / 1000}k`
  return String(n)
}

/** The query string of a box, numbers as given (no rounding: a box edge on a point stays on it). */
export function bboxPath (box: BboxParams | Record<keyof BboxParams, string | number>): string {
  return `/api/v1/spatial/bbox?min_lon=${box.min_lon}&min_lat=${box.min_lat}&max_lon=${box.max_lon}&max_lat=${box.max_lat}&limit=${box.limit}`
}

/**
 * The envelopes the peer asks PostGIS for: the box itself, or its two halves on either side of the
 * antimeridian when `min_lon > max_lon` (ST_MakeEnvelope would otherwise span the other way round).
 */
export function peerEnvelopes (box: Omit<BboxParams, 'limit'>): Envelope[] {
  if (box.min_lon <= box.max_lon) return [[box.min_lon, box.min_lat, box.max_lon, box.max_lat]]
  return [[box.min_lon, box.min_lat, 180, box.max_lat], [-180, box.min_lat, box.max_lon, box.max_lat]]
}

/**
 * The four boundary cases checked besides the city boxes, around a point placemark at `point` (its
 * coordinates as the KML wrote them): the box's west edge exactly on the point, a box across the
 * antimeridian (around Suva, the generator's city at 178.44° E), a box with no placemark (the South
 * Atlantic) and the whole world at the largest limit.
 */
export function boundaryBoxes (point: [string, string]): { name: string; box: Record<keyof BboxParams, string | number> }[] {
  const [lon, lat] = point
  const y = Number(lat)
  return [
    { name: 'west edge on a point', box: { min_lon: lon, min_lat: (y - 0.005).toFixed(6), max_lon: (Number(lon) + 0.01).toFixed(6), max_lat: (y + 0.005).toFixed(6), limit: 1000 } },
    { name: 'across the antimeridian', box: { min_lon: 178.6, min_lat: -18.4, max_lon: -179.5, max_lat: -17.9, limit: 1000 } },
    { name: 'empty', box: { min_lon: -30, min_lat: -10, max_lon: -29, max_lat: -9, limit: 1000 } },
    { name: 'the whole world', box: { min_lon: -180, min_lat: -90, max_lon: 180, max_lat: 90, limit: 10000 } }
  ]
}

/** Where two id lists first differ, in words, or null when they are equal. */
export function idsDiffer (ours: number[], peer: number[]): string | null {
  const n = Math.min(ours.length, peer.length)
  for (let i = 0; i < n; i++) {
    if (ours[i] !== peer[i]) return `position ${i}: ours ${ours[i]}, the peer ${peer[i]}`
  }
  if (ours.length !== peer.length) return `ours has ${ours.length} placemarks, the peer ${peer.length}`
  return null
}

/** The p-th percentile (0..1) of sorted numbers, nearest rank; NaN for none. */
export function percentile (sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]
}

/** Resident and peak resident memory in MiB from the text of /proc/<pid>/status; null when absent (an exited process). */
export function procMemory (status: string): { rss_mib: number; peak_rss_mib: number } | null {
  const kb = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
    return m ? Number(m[1]) : null
  }
  const rss = kb('VmRSS')
  const peak = kb('VmHWM')
  if (rss === null || peak === null) return null
  return { rss_mib: Math.round(rss / 1024), peak_rss_mib: Math.round(peak / 1024) }
}

/** Whether a figure's name ends in a size label, `(1M)`, `(10M)`, `(100k)`: a figure of --scale. */
export function isScaleFigure (name: string): boolean {
  return /\(\d+[kM]\)$/.test(name)
}

/** The targets of one size: those whose name ends in `(<label>)`, e.g. `start to ready (1M)`. */
export function targetsOfScale<T> (targets: Record<string, T>, label: string): Record<string, T> {
  return Object.fromEntries(Object.entries(targets).filter(([name]) => name.endsWith(`(${label})`)))
}

/** The route of a tile. */
export function tilePath (t: TileXYZ): string {
  return `/api/v1/tiles/${t.z}/${t.x}/${t.y}.mvt`
}

/**
 * The tiles the bench asks for, each once, in a random order: for every position given (a placemark of
 * the dataset: every tile holds data), the tile it falls in at a random zoom from 0 to maxZoom, and at
 * every zoom up to allZoomsTo (the few tiles at low zooms a random draw would seldom reach twice);
 * `rand` decides (a seeded generator: the same positions give the same tiles in the same order).
 */
export function randomTiles (positions: [number, number][], rand: () => number, maxZoom = 16, allZoomsTo = 3): TileXYZ[] {
  const tiles = new Map<string, TileXYZ>()
  const add = (t: TileXYZ | null) => { if (t) tiles.set(`${t.z}/${t.x}/${t.y}`, t) }
  for (const [lon, lat] of positions) {
    add(tileOf(lon, lat, Math.floor(rand() * (maxZoom + 1))))
    for (let z = 0; z <= Math.min(allZoomsTo, maxZoom); z++) add(tileOf(lon, lat, z))
  }
  const out = [...tiles.values()]
  // Fisher–Yates: every zoom anywhere in the order.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    const t = out[i]
    out[i] = out[j]
    out[j] = t
  }
  return out
}

/** How many tiles there are per zoom band: `z0-3`, `z4-8`, `z9-12`, `z13-16` (and `z17+` past it). */
export function tilesPerZoomBand (tiles: TileXYZ[]): Record<string, number> {
  const bands: [string, number][] = [['z0-3', 3], ['z4-8', 8], ['z9-12', 12], ['z13-16', 16], ['z17+', Infinity]]
  const out: Record<string, number> = {}
  for (const t of tiles) {
    const band = bands.find(([, top]) => t.z <= top)![0]
    out[band] = (out[band] ?? 0) + 1
  }
  return out
}
