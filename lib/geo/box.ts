/** [lon, lat] */
export type Position = [number, number]
export type Geometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'Polygon'; coordinates: Position[][] }
/** A lon/lat rectangle; minLon > maxLon means it crosses the antimeridian. */
export interface Box { minLon: number; minLat: number; maxLon: number; maxLat: number }

/** The box as planar rectangles: itself, or its two halves either side of the antimeridian. */
export function splitBox(box: Box): Box[] {
  if (box.minLon <= box.maxLon) return [box]
  return [
    { minLon: box.minLon, minLat: box.minLat, maxLon: 180, maxLat: box.maxLat },
    { minLon: -180, minLat: box.minLat, maxLon: box.maxLon, maxLat: box.maxLat }
  ]
}

/** Bounding box of a geometry (of the outer ring for a polygon); empty geometries give infinite bounds. */
export function boundsOf(g: Geometry): Box {
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

function pointInBox(p: Position, b: Box): boolean {
  return p[0] >= b.minLon && p[0] <= b.maxLon && p[1] >= b.minLat && p[1] <= b.maxLat
}

// Sign of the cross product (b - a) × (c - a): which side of line ab the point c is on.
function side(a: Position, b: Position, cx: number, cy: number): number {
  const v = (b[0] - a[0]) * (cy - a[1]) - (b[1] - a[1]) * (cx - a[0])
  return v > 0 ? 1 : v < 0 ? -1 : 0
}

/**
 * Closed segment against closed rectangle by separating axes: the x and y extents must overlap and
 * the segment's line must not leave all four corners strictly on one side.
 */
function segmentIntersectsBox(a: Position, b: Position, box: Box): boolean {
  if (Math.max(a[0], b[0]) < box.minLon || Math.min(a[0], b[0]) > box.maxLon) return false
  if (Math.max(a[1], b[1]) < box.minLat || Math.min(a[1], b[1]) > box.maxLat) return false
  const s1 = side(a, b, box.minLon, box.minLat)
  const s2 = side(a, b, box.maxLon, box.minLat)
  const s3 = side(a, b, box.maxLon, box.maxLat)
  const s4 = side(a, b, box.minLon, box.maxLat)
  return !((s1 > 0 && s2 > 0 && s3 > 0 && s4 > 0) || (s1 < 0 && s2 < 0 && s3 < 0 && s4 < 0))
}

// A ring is tested with its closing segment whether or not the last position repeats the first.
function pathIntersectsBox(points: Position[], box: Box, closed: boolean): boolean {
  if (points.length === 0) return false
  if (points.length === 1) return pointInBox(points[0], box)
  for (let i = 1; i < points.length; i++) {
    if (segmentIntersectsBox(points[i - 1], points[i], box)) return true
  }
  return closed && segmentIntersectsBox(points[points.length - 1], points[0], box)
}

/** Even-odd ray casting; only called for points known not to lie on the ring. */
function pointInRing(x: number, y: number, ring: Position[]): boolean {
  let inside = false
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i]
    const [xj, yj] = ring[j]
    if (yi > y !== yj > y && x < xi + ((y - yi) * (xj - xi)) / (yj - yi)) inside = !inside
  }
  return inside
}

function intersectsPlainBox(g: Geometry, box: Box): boolean {
  switch (g.type) {
    case 'Point':
      return pointInBox(g.coordinates, box)
    case 'LineString':
      return pathIntersectsBox(g.coordinates, box, false)
    case 'Polygon': {
      const rings = g.coordinates
      if (rings.length === 0 || rings[0].length === 0) return false
      // Covers a polygon lying wholly inside the box too: its outer ring's edges are inside.
      if (rings.some((ring) => pathIntersectsBox(ring, box, true))) return true
      // No edge meets the box, so the box is wholly inside or outside each ring and its centre decides.
      const cx = (box.minLon + box.maxLon) / 2
      const cy = (box.minLat + box.maxLat) / 2
      if (!pointInRing(cx, cy, rings[0])) return false
      for (let i = 1; i < rings.length; i++) {
        if (pointInRing(cx, cy, rings[i])) return false
      }
      return true
    }
  }
}

/** Planar ST_Intersects between a geometry and a lon/lat rectangle, boundary inclusive; handles antimeridian boxes. */
export function intersectsBox(g: Geometry, box: Box): boolean {
  return splitBox(box).some((b) => intersectsPlainBox(g, b))
}
