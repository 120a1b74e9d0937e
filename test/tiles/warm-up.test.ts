/**
 * An index's preparation before use (plugins/app/box-index.ts beforeUse) and the tiles' warm-up in it
 * (plugins/app/tiles.ts): the process's first index is put to use only once its tiles have been built and
 * dropped (box queries read the database meanwhile, nothing is cached), a preparation that fails does not
 * keep the index from use, and its tiles are still the database path's.
 */
import t from 'tap'
import { buildTestApp, openTestDatabase } from '../helper.ts'

const WORLD = { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }
const VEGAS_10 = '/api/v1/tiles/10/184/401.mvt'

t.test('the first index is used once prepared: the tiles warmed up, nothing cached, a failed preparation logged', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle)
  const seen: { state: string; size: number; searched: boolean; cached: number }[] = []
  // Registered after the tiles plugin's own: it runs once the warm-up is done.
  app.boxIndex.beforeUse(async (index) => {
    seen.push({ state: app.boxIndex.state(), size: index.size, searched: app.boxIndex.search(WORLD, 10) !== null, cached: app.datasetCache.size })
  })
  app.boxIndex.beforeUse(async () => { throw new Error('a preparation that fails') })
  await app.boxIndex.idle()

  t.equal(seen.length, 1, 'prepared once')
  t.ok(seen[0].size > 0, `the index of ${seen[0].size} placemarks`)
  t.equal(seen[0].state, 'loading', 'not yet in use while it is prepared')
  t.equal(seen[0].searched, false, 'box queries read the database meanwhile')
  t.equal(seen[0].cached, 0, 'the warm-up\'s tiles are not kept')
  t.equal(app.boxIndex.state(), 'ready', 'in use after it, the failed preparation notwithstanding')
  t.equal(app.datasetCache.size, 0, 'still nothing cached')

  // The tiles from the index are those of the database path (test/tiles/exact.test.ts holds the two equal everywhere).
  const fromIndex = await app.inject(VEGAS_10)
  t.equal(fromIndex.statusCode, 200)
  const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
  t.same(fromIndex.rawPayload, (await database.inject(VEGAS_10)).rawPayload, 'a tile from the warmed index is the database path\'s')
})
