/**
 * The dataset's facts (placemarks per geometry type, top folders, extent, time extent) as the import
 * counts them while it reads equal the same counted from the table afterwards, on PostgreSQL and PGlite:
 * folder names repeated within a path and across paths, ties, names in code point order, times of every
 * precision, open spans, points, lines and polygons at the world's edges. /api/v1/stats, the OGC
 * collection and the tiles' bounds read them; migration 027 counts them for a dataset imported before.
 */
import t from 'tap'
import type { Kysely } from 'kysely'
import { Readable } from 'node:stream'
import { openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { countDatasetFacts, datasetFacts } from '../../db/dataset-facts.ts'
import { datasetStats } from '../../db/placemarks.ts'
import { sql } from '../../db/kysely.ts'
import { up as migrate027 } from '../../db/migrations/027_dataset_facts.ts'

const placemark = (name: string, geometry: string, time = '') => `<Placemark><name>${name}</name>${time}${geometry}</Placemark>\n`
const point = (lon: number, lat: number) => `<Point><coordinates>${lon},${lat},0</coordinates></Point>`

function datasetKml (mode: 'open' | 'closed' | 'none'): string {
  const timed = mode !== 'none'
  let kml = '<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n'
  const times = ['<TimeStamp><when>1997</when></TimeStamp>', '<TimeStamp><when>2017-10-01T22:09:48.5-07:00</when></TimeStamp>',
    '<TimeSpan><begin>2001-03</begin><end>2002</end></TimeSpan>', '<TimeSpan><begin>0999-12-31</begin><end>2030-06-01T00:00:00Z</end></TimeSpan>', '']
  let k = 0
  // Nested folders whose names repeat: a placemark counts once per name of its path.
  const tree: [string, string[]][] = [['Å', ['a', 'b']], ['a', ['a', 'Z']], ['Ω', ['𝒳', 'é']], ['b', ['b', 'c']], ['d', ['e', 'f']], ['g', ['h', 'b']]]
  for (const [outer, inner] of tree) {
    kml += `<Folder><name>${outer}</name>\n`
    for (const name of inner) {
      kml += `<Folder><name>${name}</name>\n`
      for (let i = 0; i < 3 + (k % 4); i++) {
        const lon = -179.5 + ((k * 37) % 359)
        const lat = -84 + ((k * 13) % 168)
        kml += placemark(`P${k}`, point(lon, lat), timed ? times[k % times.length] : '')
        k++
      }
      kml += '</Folder>\n'
    }
    kml += placemark(`L${k++}`, '<LineString><coordinates>179.25,10,0 180,12.5,0</coordinates></LineString>')
    kml += '</Folder>\n'
  }
  kml += placemark(`Pg${k++}`, '<Polygon><outerBoundaryIs><LinearRing><coordinates>-180,-89.5,0 -170,-89.5,0 -170,-85,0 -180,-89.5,0</coordinates></LinearRing></outerBoundaryIs></Polygon>')
  kml += placemark(`Top${k++}`, point(0.000001, 89.999999), mode === 'open' ? '<TimeSpan><end>1985</end></TimeSpan>' : '')
  return kml + '</Document></kml>\n'
}

for (const kind of ['postgres', 'pglite'] as const) {
  t.test(`dataset facts on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    t.equal(await datasetFacts(handle.db), null, 'no dataset: no facts')
    t.same(await datasetStats(handle.db), { total_placemarks: 0, total_styles: 0, geometry_types: {}, top_folders: {}, timezone: null }, 'no dataset: empty statistics')

    const extents = { open: [null, '2030-06-01T00:00:00.000Z'], closed: ['0999-12-31T00:00:00.000Z', '2030-06-01T00:00:00.000Z'], none: null }
    for (const mode of ['open', 'closed', 'none'] as const) {
      await importPlacemarks(handle, Readable.from([datasetKml(mode)]), { timeZone: 'UTC', source: 'facts.kml' })
      const stored = (await datasetFacts(handle.db))!
      const counted = await countDatasetFacts(handle.db)
      t.same(stored.facts, counted, `times ${mode}: the import's facts equal those counted from the table`)
      t.equal(stored.facts.top_folders.length, 10, 'ten folder names, the most placemarks first')
      t.same(stored.facts.time_extent, extents[mode], 'the time extent (open where a timed placemark leaves it open)')
      t.same(stored.facts.extent, [-180, -89.5, 180, 89.999999], 'the extent of every placemark')
    }

    // A dataset imported before its facts were counted: migration 027 counts them from the table.
    const before = (await datasetFacts(handle.db))!.facts
    await sql`UPDATE dataset SET summary = summary - 'facts'`.execute(handle.db)
    await migrate027(handle.db as unknown as Kysely<unknown>)
    t.same((await datasetFacts(handle.db))!.facts, before, 'migration 027 counts the same facts')
  })
}
