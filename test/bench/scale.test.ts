import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { boundaryBoxes, bboxPath, idsDiffer, isScaleFigure, parseScale, peerEnvelopes, percentile, procMemory, randomTiles, scaleLabel, targetsOfScale, tilePath, tilesPerZoomBand } from '../../bench/scale.ts'
import { mulberry32 } from '../../lib/random.ts'
import { tileOf, tileReadBox } from '../../lib/geo/tiles.ts'
import { projectRoot } from '../helper.ts'

t.test('sizes: --scale values and the labels of figure names', async (t) => {
  t.equal(parseScale('1m'), 1_000_000)
  t.equal(parseScale('10M'), 10_000_000)
  t.equal(parseScale('250k'), 250_000)
  t.equal(parseScale('1.5m'), 1_500_000)
  t.equal(parseScale('12345'), 12345)
  for (const bad of ['', 'm', '-1m', '1g', '0', '1e6', 'ten']) t.equal(parseScale(bad), null, bad)
  t.equal(scaleLabel(1_000_000), '1M')
  t.equal(scaleLabel(10_000_000), '10M')
  t.equal(scaleLabel(100_000), '100k')
  t.equal(scaleLabel(12345), '12345')
})

t.test('the peer asks for a box as one envelope, or as its two halves across the antimeridian', async (t) => {
  t.same(peerEnvelopes({ min_lon: -115.2, min_lat: 36, max_lon: -115.1, max_lat: 36.1 }), [[-115.2, 36, -115.1, 36.1]])
  t.same(peerEnvelopes({ min_lon: 10, min_lat: 0, max_lon: 10, max_lat: 0 }), [[10, 0, 10, 0]], 'a point-sized box is one envelope')
  t.same(peerEnvelopes({ min_lon: 178.6, min_lat: -18.4, max_lon: -179.5, max_lat: -17.9 }), [[178.6, -18.4, 180, -17.9], [-180, -18.4, -179.5, -17.9]])
})

t.test('the boundary cases: a west edge exactly on the point, the antimeridian, empty, the whole world', async (t) => {
  const cases = boundaryBoxes(['-115.093756', '35.811641'])
  t.same(cases.map((c) => c.name), ['west edge on a point', 'across the antimeridian', 'empty', 'the whole world'])
  const edge = cases[0].box
  t.equal(edge.min_lon, '-115.093756', 'the point\'s longitude as written, not rounded')
  t.ok(Number(edge.min_lat) < 35.811641 && Number(edge.max_lat) > 35.811641 && Number(edge.max_lon) > -115.093756, 'the point is on the west edge, inside the rest')
  t.ok(Number(cases[1].box.min_lon) > Number(cases[1].box.max_lon), 'the antimeridian box has min_lon > max_lon')
  t.equal(cases[3].box.limit, 10000, 'the whole world at the largest limit')
  t.equal(bboxPath(edge), '/api/v1/spatial/bbox?min_lon=-115.093756&min_lat=35.806641&max_lon=-115.083756&max_lat=35.816641&limit=1000')
})

t.test('id lists: where they first differ', async (t) => {
  t.equal(idsDiffer([1, 5, 9], [1, 5, 9]), null)
  t.equal(idsDiffer([], []), null)
  t.equal(idsDiffer([1, 5, 9], [1, 6, 9]), 'position 1: ours 5, the peer 6')
  t.equal(idsDiffer([1, 5], [1, 5, 9]), 'ours has 2 placemarks, the peer 3')
  t.equal(idsDiffer([1, 9, 5], [1, 5, 9]), 'position 1: ours 9, the peer 5', 'the order counts')
})

t.test('percentiles by nearest rank', async (t) => {
  const sorted = Array.from({ length: 100 }, (_, i) => i + 1)
  t.equal(percentile(sorted, 0.5), 50)
  t.equal(percentile(sorted, 0.99), 99)
  t.equal(percentile([7], 0.99), 7)
  t.ok(Number.isNaN(percentile([], 0.5)))
})

t.test('memory from /proc/<pid>/status, in MiB', async (t) => {
  const status = 'Name:\tnode\nVmPeak:\t 1234567 kB\nVmHWM:\t  367000 kB\nVmRSS:\t  358400 kB\nThreads:\t11\n'
  t.same(procMemory(status), { rss_mib: 350, peak_rss_mib: 358 })
  t.equal(procMemory('Name:\tnode\nState:\tZ (zombie)\n'), null, 'an exited process has no memory lines')
  t.ok(procMemory(readFileSync('/proc/self/status', 'utf8')), 'reads this process')
})

t.test('targets of one size, and the other modes leave them alone', async (t) => {
  const targets = JSON.parse(readFileSync(join(projectRoot, 'bench', 'targets.json'), 'utf8')) as Record<string, unknown>
  t.same(Object.keys(targetsOfScale(targets, '1M')).sort(), ['bbox, database path (1M)', 'import (1M)', 'map page (1M)', 'server RSS after load (1M)', 'start to ready (1M)', 'tiles cached, box index (1M)', 'tiles cached, one map client (1M)', 'tiles cold, box index (1M)', 'tiles cold, database path (1M)', 'tiles cold, one map client (1M)'])
  t.same(Object.keys(targetsOfScale(targets, '10M')).sort(), ['bbox, database path (10M)', 'map page (10M)', 'tiles cached, box index (10M)', 'tiles cached, one map client (10M)', 'tiles cold, box index (10M)', 'tiles cold, one map client (10M)'])
  t.ok(isScaleFigure('tiles cold, box index (1M)'))
  t.ok(isScaleFigure('RSS added by the tiles (10M)'))
  t.same(Object.keys(targetsOfScale(targets, '100k')), [])
  t.ok(isScaleFigure('import (1M)'))
  t.ok(isScaleFigure('server RSS after load (100k)'))
  t.notOk(isScaleFigure('import'))
  t.notOk(isScaleFigure('placemarks page (10)'), 'a count in parentheses is no size')
  t.notOk(isScaleFigure('bbox (random city boxes, 32 connections)'))
  t.notOk(isScaleFigure('ingestion (API, batches of 1000)'))
})

t.test('the tile a position falls in, at every zoom', async (t) => {
  t.same(tileOf(-115.17, 36.11, 0), { z: 0, x: 0, y: 0 })
  t.same(tileOf(-115.17, 36.11, 1), { z: 1, x: 0, y: 0 }, 'north-west quarter')
  t.same(tileOf(139.69, 35.69, 1), { z: 1, x: 1, y: 0 }, 'Tokyo: north-east')
  t.same(tileOf(151.21, -33.87, 1), { z: 1, x: 1, y: 1 }, 'Sydney: south-east')
  // (-115.17 + 180) / 360 * 2^14 = 2950.5; (1 - ln(tan φ + sec φ) / π) / 2 * 2^14 = 6427.9 at φ = 36.11°.
  t.same(tileOf(-115.17, 36.11, 14), { z: 14, x: 2950, y: 6427 })
  t.same(tileOf(180, 0, 3), { z: 3, x: 7, y: 4 }, 'the east edge falls in the last column')
  t.same(tileOf(0, -85.0511287798066, 2), { z: 2, x: 2, y: 3 }, 'the south edge falls in the last row')
  t.equal(tileOf(0, 86, 5), null, 'beyond Web Mercator')
  t.equal(tileOf(181, 0, 5), null)
  t.equal(tileOf(NaN, 0, 5), null)
  for (const [lon, lat] of [[-115.17, 36.11], [178.44, -18.14], [-21.94, 64.15], [0, 0]]) {
    for (let z = 0; z <= 16; z++) {
      const tile = tileOf(lon, lat, z)!
      const box = tileReadBox(tile.z, tile.x, tile.y, 0)
      t.ok(lon >= box.minLon && lon <= box.maxLon && lat >= box.minLat && lat <= box.maxLat, `${lon},${lat} is inside its tile ${tilePath(tile)}`)
    }
  }
  t.equal(tilePath({ z: 14, x: 2950, y: 6428 }), '/api/v1/tiles/14/2950/6428.mvt')
})

t.test('random tiles: each once, every zoom up to 3 for every position, a random zoom from 0 to 16, in a seeded order', async (t) => {
  const rand = mulberry32(5)
  const positions: [number, number][] = Array.from({ length: 300 }, () => [-115.17 + (rand() - 0.5) * 0.6, 36.11 + (rand() - 0.5) * 0.6])
  positions.push([139.69, 35.69], [0, 89])
  const tiles = randomTiles(positions, mulberry32(12))
  const keys = tiles.map(tilePath)
  t.equal(new Set(keys).size, keys.length, 'no tile twice')
  t.same(randomTiles(positions, mulberry32(12)), tiles, 'the same seed gives the same tiles in the same order')
  t.notSame(randomTiles(positions, mulberry32(13)), tiles, 'another seed another draw')
  for (const [lon, lat] of positions.slice(0, -1)) {
    for (let z = 0; z <= 3; z++) t.ok(keys.includes(tilePath(tileOf(lon, lat, z)!)), `z${z} of ${lon},${lat}`)
  }
  t.notOk(tiles.some((tile) => tile.z > 16), 'no zoom past 16')
  t.ok(tiles.some((tile) => tile.z >= 13) && tiles.some((tile) => tile.z >= 9 && tile.z <= 12) && tiles.some((tile) => tile.z >= 4 && tile.z <= 8), 'random zooms spread over the range')
  // Every tile holds one of the positions: tiles with data.
  t.ok(tiles.every((tile) => positions.some(([lon, lat]) => tilePath(tileOf(lon, lat, tile.z) ?? { z: -1, x: 0, y: 0 }) === tilePath(tile))))
  t.ok(keys.indexOf('/api/v1/tiles/0/0/0.mvt') > 0, 'shuffled: the first tile drawn is not first')
  t.same(randomTiles([], mulberry32(1)), [])
  t.same(randomTiles([[0, 0]], () => 0, 16, 3).map((tile) => tile.z).sort(), [0, 1, 2, 3], 'zoom 0 drawn: one tile per zoom, not two')
  const counts = tilesPerZoomBand(tiles)
  t.equal(Object.values(counts).reduce((a, b) => a + b, 0), tiles.length)
  t.same(Object.keys(counts).sort(), ['z0-3', 'z13-16', 'z4-8', 'z9-12'])
  t.same(tilesPerZoomBand([{ z: 0, x: 0, y: 0 }, { z: 3, x: 1, y: 1 }, { z: 8, x: 0, y: 0 }, { z: 17, x: 0, y: 0 }]), { 'z0-3': 2, 'z4-8': 1, 'z17+': 1 })
})
