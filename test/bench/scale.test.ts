import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { boundaryBoxes, bboxPath, idsDiffer, isScaleFigure, parseScale, peerEnvelopes, percentile, procMemory, scaleLabel, targetsOfScale } from '../../bench/scale.ts'
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
  t.same(Object.keys(targetsOfScale(targets, '1M')).sort(), ['bbox, database path (1M)', 'import (1M)', 'server RSS after load (1M)', 'start to ready (1M)'])
  t.same(Object.keys(targetsOfScale(targets, '10M')), ['bbox, database path (10M)'])
  t.same(Object.keys(targetsOfScale(targets, '100k')), [])
  t.ok(isScaleFigure('import (1M)'))
  t.ok(isScaleFigure('server RSS after load (100k)'))
  t.notOk(isScaleFigure('import'))
  t.notOk(isScaleFigure('placemarks page (10)'), 'a count in parentheses is no size')
  t.notOk(isScaleFigure('bbox (random city boxes, 32 connections)'))
  t.notOk(isScaleFigure('ingestion (API, batches of 1000)'))
})
