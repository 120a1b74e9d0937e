import { test } from 'tap'
import { availableParallelism } from 'node:os'
import { defaultPoolMax, loadConfig } from '../../lib/config.ts'

test('the database pool defaults to twice the cores plus one, at most 10', async (t) => {
  t.equal(defaultPoolMax(1), 3)
  t.equal(defaultPoolMax(2), 5)
  t.equal(defaultPoolMax(4), 9)
  t.equal(defaultPoolMax(64), 10)
  t.equal(defaultPoolMax(0), 3, 'a machine that reports no cores still gets a working pool')
  t.equal(loadConfig({}).DB_POOL_MAX, defaultPoolMax(availableParallelism()))
  t.equal(loadConfig({ DB_POOL_MAX: '40' }).DB_POOL_MAX, 40, 'DB_POOL_MAX overrides it')
})
