export type Position = [number, number]
export type Geometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'Polygon'; coordinates: Position[][] }
export interface Box { minLon: number; minLat: number; maxLon: number; maxLat: number }

// A box whose west edge is east of its east edge crosses the antimeridian: two boxes on the plane.
export function splitBox(box: Box): Box[] {
  if (box.minLon <= box.maxLon) return [box]
  return [
    { minLon: box.minLon, minLat: box.minLat, maxLon: 180, maxLat: box.maxLat },
    { minLon: -180, minLat: box.minLat, maxLon: box.maxLon, maxLat: box.maxLat }
  ]
}

export function boundsOf(g: Geometry): Box {
  const points: Position[] = g.type === 'Point' ? [g.coordinates] : g.type === 'LineString' ? g.coordinates : g.coordinates[0]
  let minLon = Infinity, minLat = Infinity, maxLon = -Infinity, maxLat = -Infinity
  for (const [lon, lat] of points) {
    if (lon < minLon) minLon = lon
    if (lon > maxLon) maxLon = lon
    if (lat < minLat) minLat = lat
    if (lat > maxLat) maxLat = lat
  }
  return { minLon, minLat, maxLon, maxLat }
}

function pointInBox([x, y]: Position, b: Box): boolean {
  return x >= b.minLon && x <= b.maxLon && y >= b.minLat && y <= b.maxLat
}

function orientation(a: Position, b: Position, c: Position): number {
  const v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
  return v > 0 ? 1 : v < 0 ? -1 : 0
}

function onSegment(a: Position, b: Position, p: Position): boolean {
  return Math.min(a[0], b[0]) <= p[0] && p[0] <= Math.max(a[0], b[0]) && Math.min(a[1], b[1]) <= p[1] && p[1] <= Math.max(a[1], b[1])
}

function segmentsIntersect(p1: Position, p2: Position, q1: Position, q2: Position): boolean {
  const o1 = orientation(p1, p2, q1)
  const o2 = orientation(p1, p2, q2)
  const o3 = orientation(q1, q2, p1)
  const o4 = orientation(q1, q2, p2)
  if (o1 !== o2 && o3 !== o4) return true
  if (o1 === 0 && onSegment(p1, p2, q1)) return true
  if (o2 === 0 && onSegment(p1, p2, q2)) return true
  if (o3 === 0 && onSegment(q1, q2, p1)) return true
  if (o4 === 0 && onSegment(q1, q2, p2)) return true
  return false
}

// Closed segment against closed rectangle: an end inside, or a crossing of one of the four edges.
function segmentIntersectsBox(a: Position, b: Position, box: Box): boolean {
  if (pointInBox(a, box) || pointInBox(b, box)) return true
  if (Math.max(a[0], b[0]) < box.minLon || Math.min(a[0], b[0]) > box.maxLon) return false
  if (Math.max(a[1], b[1]) < box.minLat || Math.min(a[1], b[1]) > box.maxLat) return false
  const sw: Position = [box.minLon, box.minLat]
  const se: Position = [box.maxLon, box.minLat]
  const ne: Position = [box.maxLon, box.maxLat]
  const nw: Position = [box.minLon, box.maxLat]
  return segmentsIntersect(a, b, sw, se) || segmentsIntersect(a, b, se, ne) ||
    segmentsIntersect(a, b, ne, nw) || segmentsIntersect(a, b, nw, sw)
}

function pathIntersectsBox(points: Position[], box: Box, closed: boolean): boolean {
  if (points.length === 1) return pointInBox(points[0], box)
  for (let i = 0; i + 1 < points.length; i++) {
    if (segmentIntersectsBox(points[i], points[i + 1], box)) return true
  }
  if (closed && points.length > 2) return segmentIntersectsBox(points[points.length - 1], points[0], box)
  return false
}

// Even-odd ray casting; callers only ask for points known not to lie on the ring.
function pointInRing([x, y]: Position, ring: Position[]): boolean {
  let inside = false
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i]
    const [xj, yj] = ring[j]
    if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside
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
      if (rings.some((ring) => pathIntersectsBox(ring, box, true))) return true
      // No edge touches the box, so the box lies wholly inside or outside each ring: one point decides.
      const probe: Position = [box.minLon, box.minLat]
      if (!pointInRing(probe, rings[0])) return false
      return !rings.slice(1).some((hole) => pointInRing(probe, hole))
    }
  }
}

/** ST_Intersects between a geometry and a lon/lat rectangle, boundary inclusive, planar. */
export function intersectsBox(g: Geometry, box: Box): boolean {
  return splitBox(box).some((b) => intersectsPlainBox(g, b))
}
