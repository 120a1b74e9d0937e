/** [lon, lat] */
export type Position = [number, number]
export type Geometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'Polygon'; coordinates: Position[][] }
/** A lon/lat rectangle; minLon > maxLon means it crosses the antimeridian. */
export interface Box { minLon: number; minLat: number; maxLon: number; maxLat: number }

/** The box as planar rectangles: itself, or its two halves either side of the antimeridian. */
export function splitBox (box: Box): Box[] {
  if (box.minLon <= box.maxLon) return [box]
  return [
    { minLon: box.minLon, minLat: box.minLat, maxLon: 180, maxLat: box.maxLat },
    { minLon: -180, minLat: box.minLat, maxLon: box.maxLon, maxLat: box.maxLat }
  ]
}

/** Bounding box of a geometry (of the outer ring for a polygon); empty geometries give infinite bounds. */
export function boundsOf (g: Geometry): Box {
  const points: Position[] = g.type === 'Point' ? [g.coordinates] : g.type === 'LineString' ? g.coordinates : (g.coordinates[0] ?? [])
  let minLon = Infinity
  let minLat = Infinity
  let maxLon = -Infinity
  let maxLat = -Infinity
  for (const [lon, lat] of points) {
    if (lon < minLon) minLon = lon
    if (lon > maxLon) maxLon = lon
    if (lat < minLat) minLat = lat
    if (lat > maxLat) maxLat = lat
  }
  return { minLon, minLat, maxLon, maxLat }
}

/**
 * A geometry packed into numbers, the form the exact test reads (the box index keeps a million of them
 * in one Float64Array, outside the garbage collector's way): its kind, its number of paths, then per
 * path the number of positions followed by their lon, lat pairs. A point is one path of one position,
 * a line string one path, a polygon its rings.
 */
const POINT = 0
const LINE_STRING = 1
const POLYGON = 2

export function packGeometry (g: Geometry): number[] {
  const paths = g.type === 'Point' ? [[g.coordinates]] : g.type === 'LineString' ? [g.coordinates] : g.coordinates
  const out = [g.type === 'Point' ? POINT : g.type === 'LineString' ? LINE_STRING : POLYGON, paths.length]
  for (const path of paths) {
    out.push(path.length)
    for (const [lon, lat] of path) out.push(lon, lat)
  }
  return out
}

type Packed = ArrayLike<number>

/**
 * The geometry packed at c[o] (see packGeometry), as GeoJSON: the same numbers, so the same geometry
 * for every use but a third coordinate, which packing leaves out.
 */
export function unpackGeometry (c: Packed, o: number): Geometry {
  const kind = c[o]
  const paths: Position[][] = []
  for (let p = 0, at = o + 2; p < c[o + 1]; p++) {
    const n = c[at]
    const path: Position[] = new Array(n)
    for (let k = 0; k < n; k++) path[k] = [c[at + 1 + 2 * k], c[at + 2 + 2 * k]]
    paths.push(path)
    at += 1 + 2 * n
  }
  if (kind === POINT) return { type: 'Point', coordinates: paths[0][0] }
  if (kind === LINE_STRING) return { type: 'LineString', coordinates: paths[0] }
  return { type: 'Polygon', coordinates: paths }
}

function pointInBox (x: number, y: number, b: Box): boolean {
  return x >= b.minLon && x <= b.maxLon && y >= b.minLat && y <= b.maxLat
}

// Sign of the cross product (b - a) × (c - a): which side of line ab the point c is on.
function side (ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  const v = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
  return v > 0 ? 1 : v < 0 ? -1 : 0
}

/**
 * Closed segment against closed rectangle by separating axes: the x and y extents must overlap and
 * the segment's line must not leave all four corners strictly on one side.
 */
function segmentIntersectsBox (ax: number, ay: number, bx: number, by: number, box: Box): boolean {
  if (Math.max(ax, bx) < box.minLon || Math.min(ax, bx) > box.maxLon) return false
  if (Math.max(ay, by) < box.minLat || Math.min(ay, by) > box.maxLat) return false
  const s1 = side(ax, ay, bx, by, box.minLon, box.minLat)
  const s2 = side(ax, ay, bx, by, box.maxLon, box.minLat)
  const s3 = side(ax, ay, bx, by, box.maxLon, box.maxLat)
  const s4 = side(ax, ay, bx, by, box.minLon, box.maxLat)
  return !((s1 > 0 && s2 > 0 && s3 > 0 && s4 > 0) || (s1 < 0 && s2 < 0 && s3 < 0 && s4 < 0))
}

// The path of n positions whose first lon is at c[at]. A ring is tested with its closing segment
// whether or not the last position repeats the first.
function pathIntersectsBox (c: Packed, at: number, n: number, box: Box, closed: boolean): boolean {
  if (n === 0) return false
  if (n === 1) return pointInBox(c[at], c[at + 1], box)
  const end = at + 2 * n
  for (let i = at + 2; i < end; i += 2) {
    if (segmentIntersectsBox(c[i - 2], c[i - 1], c[i], c[i + 1], box)) return true
  }
  return closed && segmentIntersectsBox(c[end - 2], c[end - 1], c[at], c[at + 1], box)
}

/** Even-odd ray casting; only called for points known not to lie on the ring. */
function pointInRing (x: number, y: number, c: Packed, at: number, n: number): boolean {
  let inside = false
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = c[at + 2 * i]
    const yi = c[at + 2 * i + 1]
    const xj = c[at + 2 * j]
    const yj = c[at + 2 * j + 1]
    if ((yi > y) !== (yj > y) && x < xi + ((y - yi) * (xj - xi)) / (yj - yi)) inside = !inside
  }
  return inside
}

// The packed geometry starting at c[o] against a box that does not cross the antimeridian.
function packedIntersectsPlainBox (c: Packed, o: number, box: Box): boolean {
  const kind = c[o]
  const paths = c[o + 1]
  if (kind !== POLYGON) return paths > 0 && pathIntersectsBox(c, o + 3, c[o + 2], box, false)
  if (paths === 0 || c[o + 2] === 0) return false
  // Covers a polygon lying wholly inside the box too: its outer ring's edges are inside.
  for (let r = 0, at = o + 2; r < paths; r++, at += 1 + 2 * c[at]) {
    if (pathIntersectsBox(c, at + 1, c[at], box, true)) return true
  }
  // No edge meets the box, so the box is wholly inside or outside each ring and its centre decides.
  const cx = (box.minLon + box.maxLon) / 2
  const cy = (box.minLat + box.maxLat) / 2
  for (let r = 0, at = o + 2; r < paths; r++, at += 1 + 2 * c[at]) {
    // Inside the outer ring and outside every hole.
    if (pointInRing(cx, cy, c, at + 1, c[at]) !== (r === 0)) return false
  }
  return true
}

/** Planar ST_Intersects between the packed geometry starting at c[o] and a lon/lat rectangle (see intersectsBox). */
export function packedIntersectsBox (c: Packed, o: number, box: Box): boolean {
  if (box.minLon <= box.maxLon) return packedIntersectsPlainBox(c, o, box)
  return splitBox(box).some((b) => packedIntersectsPlainBox(c, o, b))
}

/** Planar ST_Intersects between a geometry and a lon/lat rectangle, boundary inclusive; handles antimeridian boxes. */
export function intersectsBox (g: Geometry, box: Box): boolean {
  return packedIntersectsBox(packGeometry(g), 0, box)
}
