import t from 'tap'
import { Readable } from 'node:stream'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { importText, sameDataset, TZ } from './datasets.ts'

const exportApp = buildTestApp

const TIMES = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document><name>times</name>
<Placemark><name>instant at the Tropicana</name><TimeStamp><when>2017-10-01T22:09:48-07:00</when></TimeStamp><Point><coordinates>-115.17,36.09</coordinates></Point></Placemark>
<Placemark><name>a day</name><description>tropicana avenue</description><TimeStamp><when>2017-10-02</when></TimeStamp><Point><coordinates>-115.17,36.10</coordinates></Point></Placemark>
<Placemark><name>a span</name><TimeSpan><begin>2017-09</begin><end>2017-10-01</end></TimeSpan><Point><coordinates>-115.17,36.11</coordinates></Point></Placemark>
<Placemark><name>from 2018</name><TimeSpan><begin>2018</begin></TimeSpan><Point><coordinates>-115.17,36.12</coordinates></Point></Placemark>
<Placemark><name>gx</name><gx:TimeStamp><when>2016</when></gx:TimeStamp><Point><coordinates>-115.17,36.13</coordinates></Point></Placemark>
<Placemark><name>a month</name><TimeStamp><when> 1997-03 </when></TimeStamp><Point><coordinates>-115.17,36.15</coordinates></Point></Placemark>
<Placemark><name>until noon</name><TimeSpan><end>2017-10-01T12:00Z</end></TimeSpan><Point><coordinates>-115.17,36.16</coordinates></Point></Placemark>
<Placemark><name>bad when, good span</name><TimeStamp><when>soon</when></TimeStamp><TimeSpan><begin>1997</begin><end>later</end></TimeSpan><Point><coordinates>-115.17,36.17</coordinates></Point></Placemark>
<Placemark><name>not a time</name><TimeStamp><when>yesterday</when></TimeStamp><Point><coordinates>-115.17,36.18</coordinates></Point></Placemark>
<Placemark><name>timeless</name><Point><coordinates>-115.17,36.14</coordinates></Point></Placemark>
</Document></kml>`

// Each placemark's name and its time element as exported.
const exportedTimes = (body: string) => [...body.matchAll(/<name>([^<]*)<\/name>(?:<description>[^<]*<\/description>)?(<Time(?:Stamp|Span)>.*?<\/Time(?:Stamp|Span)>)?/g)].slice(1).map((m) => [m[1], m[2] ?? null])
const TIMES_AS_WRITTEN = [
  ['instant at the Tropicana', '<TimeStamp><when>2017-10-01T22:09:48-07:00</when></TimeStamp>'],
  ['a day', '<TimeStamp><when>2017-10-02</when></TimeStamp>'],
  ['a span', '<TimeSpan><begin>2017-09</begin><end>2017-10-01</end></TimeSpan>'],
  ['from 2018', '<TimeSpan><begin>2018</begin></TimeSpan>'],
  ['gx', '<TimeStamp><when>2016</when></TimeStamp>'],
  ['a month', '<TimeStamp><when>1997-03</when></TimeStamp>'],
  ['until noon', '<TimeSpan><end>2017-10-01T12:00Z</end></TimeSpan>'],
  ['bad when, good span', '<TimeSpan><begin>1997</begin></TimeSpan>'],
  ['not a time', null],
  ['timeless', null]
]

t.test('KML times survive export and import as the elements they came in, at their precision; q narrows the export as it narrows the list', async (t) => {
  const original = await importText(t, TIMES)
  const app = await exportApp(t, original)
  const res = await app.inject('/api/v1/export.kml')
  t.equal(res.statusCode, 200)
  t.same(exportedTimes(res.body), TIMES_AS_WRITTEN, 'each time as written: a TimeStamp of a year stays <when>1997</when>')
  // The same stored times and written forms again: exporting the import of the export gives the same elements.
  await sameDataset(t, await importText(t, res.body), original, 'times')
  const found = await app.inject('/api/v1/export.kml?q=TROPICANA')
  t.same((found.body.match(/<name>[^<]*<\/name>/g) ?? []).filter((n) => n !== '<name>export.kml</name>'), ['<name>instant at the Tropicana</name>', '<name>a day</name>'])
  // datetime narrows it as it narrows the OGC items (and the map's tiles): what the map shows at a time is what it exports.
  const placemarkNames = (kml: string) => [...kml.matchAll(/<Placemark\b[^>]*>\s*<name>([^<]*)<\/name>/g)].map((m) => m[1])
  for (const datetime of ['2017-10-01', '1997', '2018-01-01T00:00:00Z/..', '../1997-03-15', '2017-10-02T05:09:48Z']) {
    const kml = await app.inject(`/api/v1/export.kml?datetime=${encodeURIComponent(datetime)}`)
    const items = (await app.inject(`/ogc/collections/placemarks/items?datetime=${encodeURIComponent(datetime)}&limit=1000`)).json() as { features: { properties: { name: string } }[] }
    t.same(placemarkNames(kml.body), items.features.map((f) => f.properties.name), `datetime=${datetime}: as the OGC items`)
  }
  t.ok(placemarkNames((await app.inject('/api/v1/export.kml?datetime=2017-10-01')).body).length > 0, 'a date with placemarks')
  t.same((await app.inject('/api/v1/export.kml?datetime=yesterday')).json(), {
    error: 'Bad Request', message: 'querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end'
  }, 'a malformed datetime: 400 with the rule')

  // A dataset stored before the written forms were kept: the instants, as a TimeStamp or a TimeSpan.
  await sql`UPDATE placemarks SET kml_time = NULL`.execute(original.db)
  const body = (await (await exportApp(t, original)).inject('/api/v1/export.kml')).body
  t.match(body, '<name>a month</name><TimeSpan><begin>1997-03-01T00:00:00.000Z</begin><end>1997-03-31T23:59:59.999Z</end></TimeSpan>')
  t.match(body, '<name>instant at the Tropicana</name><TimeStamp><when>2017-10-02T05:09:48.000Z</when></TimeStamp>')
})

t.test('the embedded database (PGlite) keeps the written times too', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  await importPlacemarks(handle, Readable.from([TIMES]), { timeZone: TZ, source: 'times.kml' })
  const res = await (await exportApp(t, handle)).inject('/api/v1/export.kml')
  t.same(exportedTimes(res.body), TIMES_AS_WRITTEN)
})
