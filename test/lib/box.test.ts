import t from 'tap'
import { boundsOf, intersectsBox, splitBox, type Box, type Geometry, type Position } from '../../lib/geo/box.ts'

const box: Box = { minLon: 0, minLat: 0, maxLon: 10, maxLat: 10 }
const point = (lon: number, lat: number): Geometry => ({ type: 'Point', coordinates: [lon, lat] })
const line = (...coordinates: Position[]): Geometry => ({ type: 'LineString', coordinates })
const polygon = (...rings: Position[][]): Geometry => ({ type: 'Polygon', coordinates: rings })
const square = (x0: number, y0: number, x1: number, y1: number, closed = true): Position[] => {
  const ring: Position[] = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
  return closed ? [...ring, [x0, y0]] : ring
}

t.test('points', async (t) => {
  t.equal(intersectsBox(point(5, 5), box), true, 'inside')
  t.equal(intersectsBox(point(10, 5), box), true, 'on an edge')
  t.equal(intersectsBox(point(5, 0), box), true, 'on the bottom edge')
  t.equal(intersectsBox(point(10, 10), box), true, 'on a corner')
  t.equal(intersectsBox(point(0, 0), box), true, 'on the origin corner')
  t.equal(intersectsBox(point(10.0001, 5), box), false, 'just outside')
  t.equal(intersectsBox(point(-5, 20), box), false, 'outside')
  const zero: Box = { minLon: 0, minLat: 0, maxLon: 0, maxLat: 0 }
  t.equal(intersectsBox(point(0, 0), zero), true, 'zero-size box at the point')
  t.equal(intersectsBox(point(0, 0.5), zero), false)
})

t.test('line strings', async (t) => {
  t.equal(intersectsBox(line([-5, 5], [15, 5]), box), true, 'crosses with no vertex inside')
  t.equal(intersectsBox(line([-3, 5], [5, -3]), box), true, 'cuts the corner region diagonally, no vertex inside')
  t.equal(intersectsBox(line([-5, 15], [15, -5]), box), true, 'diagonal through the middle')
  t.equal(intersectsBox(line([5, 15], [15, 5]), box), true, 'touches only the corner (10,10)')
  t.equal(intersectsBox(line([5, 20], [20, 5], [30, 30]), box), false, 'diagonal passing by the corner: bboxes overlap, no contact')
  t.equal(intersectsBox(line([5.1, 15], [15, 5.2]), box), false, 'just misses the corner')
  t.equal(intersectsBox(line([-5, 10], [15, 10]), box), true, 'runs along the top edge')
  t.equal(intersectsBox(line([20, 20], [30, 30], [1, 1]), box), true, 'a later segment enters')
  t.equal(intersectsBox(line([5, 5], [5, 5]), box), true, 'zero-length segment inside')
  t.equal(intersectsBox(line([15, 5], [15, 5]), box), false, 'zero-length segment outside')
  t.equal(intersectsBox(line([3, 4]), box), true, 'single position')
  t.equal(intersectsBox(line(), box), false, 'empty')
  t.equal(intersectsBox(line([-5, 5], [15, 5]), { minLon: 2, minLat: 5, maxLon: 2, maxLat: 5 }), true, 'zero-size box on the line')
})

t.test('polygons', async (t) => {
  const big = square(-100, -100, 100, 100)
  const hole = square(-20, -20, 20, 20)
  t.equal(intersectsBox(polygon(big), box), true, 'box inside a polygon')
  t.equal(intersectsBox(polygon(square(-100, -100, 100, 100, false)), box), true, 'unclosed ring')
  t.equal(intersectsBox(polygon(big, hole), box), false, 'box inside a hole')
  t.equal(intersectsBox(polygon(big, square(5, 5, 20, 20)), box), true, 'box overlapping the hole edge')
  t.equal(intersectsBox(polygon(big, square(-20, -20, 10, 10)), box), true, 'hole edges touching the box boundary')
  t.equal(intersectsBox(polygon(square(2, 2, 4, 4)), box), true, 'polygon inside the box')
  t.equal(intersectsBox(polygon(square(10, 10, 20, 20)), box), true, 'polygon sharing a corner')
  t.equal(intersectsBox(polygon(square(20, 20, 30, 30)), box), false, 'polygon apart')
  t.equal(intersectsBox(polygon([[5, 20], [20, 5], [30, 30], [5, 20]]), box), false, 'triangle near the corner, bboxes overlap')
  t.equal(intersectsBox(polygon(square(-10, -10, 20, 20), square(2, 2, 8, 8)), { minLon: 1, minLat: 1, maxLon: 9, maxLat: 9 }), true, 'hole inside the box')
  // A polygon with a hole that itself contains an island-free ring: the box sits in the ring between.
  t.equal(intersectsBox(polygon(big, square(50, 50, 60, 60)), box), true, 'box away from the hole')
  t.equal(intersectsBox(polygon([]), box), false, 'empty polygon')
})

t.test('antimeridian boxes', async (t) => {
  const am: Box = { minLon: 170, minLat: -10, maxLon: -170, maxLat: 10 }
  t.equal(intersectsBox(point(179.5, 0), am), true)
  t.equal(intersectsBox(point(-179.5, 0), am), true)
  t.equal(intersectsBox(point(180, 0), am), true)
  t.equal(intersectsBox(point(0, 0), am), false)
  t.equal(intersectsBox(point(179.5, 20), am), false, 'outside by latitude')
  t.equal(intersectsBox(line([-175, -20], [-175, 20]), am), true, 'line across the western half')
  t.equal(intersectsBox(line([175, 0], [-175, 0]), am), true, 'planar line from one half to the other')
  t.equal(intersectsBox(line([-160, 0], [160, 0]), am), false, 'planar, so a line between ±160 does not wrap through 180')
  t.equal(intersectsBox(line([-160, 0], [0, 0]), am), false)
  t.same(splitBox(am), [
    { minLon: 170, minLat: -10, maxLon: 180, maxLat: 10 },
    { minLon: -180, minLat: -10, maxLon: -170, maxLat: 10 }
  ])
  t.same(splitBox(box), [box])
  t.equal(splitBox(box)[0], box, 'normal box returned as is')
})

t.test('a box spanning everything', async (t) => {
  const world: Box = { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }
  t.equal(intersectsBox(point(-180, -90), world), true)
  t.equal(intersectsBox(point(179.999, 89.9), world), true)
  t.equal(intersectsBox(line([-170, 0], [170, 0]), world), true)
  t.equal(intersectsBox(polygon(square(-10, -10, 10, 10)), world), true)
})

t.test('boundsOf', async (t) => {
  t.same(boundsOf(point(3, 4)), { minLon: 3, minLat: 4, maxLon: 3, maxLat: 4 })
  t.same(boundsOf(line([3, 4], [-1, 8], [2, -2])), { minLon: -1, minLat: -2, maxLon: 3, maxLat: 8 })
  t.same(boundsOf(polygon(square(-5, -6, 7, 8), square(-1, -1, 1, 1))), { minLon: -5, minLat: -6, maxLon: 7, maxLat: 8 })
})
