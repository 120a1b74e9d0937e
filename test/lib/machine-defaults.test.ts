import { test } from 'tap'
import { availableParallelism, totalmem } from 'node:os'
import { BOX_INDEX_MAX_MB, defaultBoxIndexMb, defaultPoolMax, loadConfig, memoryLimit } from '../../lib/config.ts'

test('the database pool defaults to twice the cores plus one, at most 10', async (t) => {
  t.equal(defaultPoolMax(1), 3)
  t.equal(defaultPoolMax(2), 5)
  t.equal(defaultPoolMax(4), 9)
  t.equal(defaultPoolMax(64), 10)
  t.equal(defaultPoolMax(0), 3, 'a machine that reports no cores still gets a working pool')
  t.equal(loadConfig({}).DB_POOL_MAX, defaultPoolMax(availableParallelism()))
  t.equal(loadConfig({ DB_POOL_MAX: '40' }).DB_POOL_MAX, 40, 'DB_POOL_MAX overrides it')
})

test('the box index defaults to a quarter of the memory the process may use, at most BOX_INDEX_MAX_MB', async (t) => {
  const GiB = 1024 ** 3
  t.equal(defaultBoxIndexMb(1 * GiB), 256, 'a 1 GiB container: room for 1M generated placemarks (200 MB)')
  t.equal(defaultBoxIndexMb(4 * GiB), 1024)
  t.equal(defaultBoxIndexMb(24 * GiB), BOX_INDEX_MAX_MB, 'a large machine: the cap (one index is one buffer of under 4 GiB)')
  t.equal(defaultBoxIndexMb(0), 0, 'no memory reported: no index, box queries read the database')
  const limit = memoryLimit()
  t.ok(limit > 0 && limit <= totalmem(), 'the limit is the control group\'s when it has one, never past the machine\'s memory')
  t.equal(loadConfig({}).BBOX_INDEX_MB, defaultBoxIndexMb(limit))
  t.equal(loadConfig({ BBOX_INDEX_MB: '64' }).BBOX_INDEX_MB, 64, 'BBOX_INDEX_MB overrides it')
  t.throws(() => loadConfig({ BBOX_INDEX_MB: String(BOX_INDEX_MAX_MB + 1) }), /BBOX_INDEX_MB/, 'past the cap is refused at start-up')
})
