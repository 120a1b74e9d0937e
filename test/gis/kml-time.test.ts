import t from 'tap'
import { Readable } from 'node:stream'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { kmlTimeRange, placemarkTime, writtenTime } from '../../lib/kml/time.ts'

t.test('every KML date form as the period it names', async (t) => {
  const cases: [string, [string, string] | null][] = [
    ['2017', ['2017-01-01T00:00:00.000Z', '2017-12-31T23:59:59.999Z']],
    ['2016-02', ['2016-02-01T00:00:00.000Z', '2016-02-29T23:59:59.999Z']],
    ['2017-10-01', ['2017-10-01T00:00:00.000Z', '2017-10-01T23:59:59.999Z']],
    ['2017-10-01T22:09:48Z', ['2017-10-01T22:09:48.000Z', '2017-10-01T22:09:48.000Z']],
    ['2017-10-01T22:09:48-07:00', ['2017-10-02T05:09:48.000Z', '2017-10-02T05:09:48.000Z']],
    ['2017-10-01T22:09:48.25+02:00', ['2017-10-01T20:09:48.250Z', '2017-10-01T20:09:48.250Z']],
    ['2017-10-01T22:09:48', ['2017-10-01T22:09:48.000Z', '2017-10-01T22:09:48.000Z']],
    ['2017-10-01T22:09Z', ['2017-10-01T22:09:00.000Z', '2017-10-01T22:09:00.000Z']],
    ['  2017-10-01  ', ['2017-10-01T00:00:00.000Z', '2017-10-01T23:59:59.999Z']],
    ['0050', ['0050-01-01T00:00:00.000Z', '0050-12-31T23:59:59.999Z']],
    ['2017-13', null], ['2017-02-30', null], ['2017-10-01T25:00:00Z', null], ['17', null], ['yesterday', null], ['', null], ['2017-10-01T22:09:48+15:00', null]
  ]
  for (const [text, want] of cases) {
    const range = kmlTimeRange(text)
    t.same(range ? [range.begin, range.end] : null, want, JSON.stringify(text))
  }
  t.same(placemarkTime(undefined), { begin: null, end: null })
  t.same(placemarkTime({ begin: '2017-10', end: '2017-10-02' }), { begin: '2017-10-01T00:00:00.000Z', end: '2017-10-02T23:59:59.999Z' })
  t.same(placemarkTime({ begin: '2017' }), { begin: '2017-01-01T00:00:00.000Z', end: null })
  t.same(placemarkTime({ end: 'not a date' }), { begin: null, end: null })
  // The written form kept for the export: the element and the texts the period was read from.
  t.same(writtenTime(undefined), null)
  t.same(writtenTime({ when: ' 1997 ' }), { when: '1997' })
  t.same(writtenTime({ when: 'soon', begin: '2017-10', end: 'later' }), { begin: '2017-10' })
  t.same(writtenTime({ begin: '2017', end: '2018-02' }), { begin: '2017', end: '2018-02' })
  t.same(writtenTime({ when: 'yesterday' }), null)
})

const kml = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document><name>times</name>
<Placemark><name>instant</name><TimeStamp><when>2017-10-01T22:09:48-07:00</when></TimeStamp><Point><coordinates>-115.17,36.09</coordinates></Point></Placemark>
<Placemark><name>a day</name><TimeStamp><when>2017-10-02</when></TimeStamp><Point><coordinates>-115.17,36.10</coordinates></Point></Placemark>
<Placemark><name>a span</name><TimeSpan><begin>2017-09</begin><end>2017-10-01</end></TimeSpan><Point><coordinates>-115.17,36.11</coordinates></Point></Placemark>
<Placemark><name>from 2018</name><TimeSpan><begin>2018</begin></TimeSpan><Point><coordinates>-115.17,36.12</coordinates></Point></Placemark>
<Placemark><name>gx</name><gx:TimeStamp><when>2016</when></gx:TimeStamp><Point><coordinates>-115.17,36.13</coordinates></Point></Placemark>
<Placemark><name>timeless</name><Point><coordinates>-115.17,36.14</coordinates></Point></Placemark>
</Document></kml>`

// The times of `kml`'s placemarks as stored and served: [name, time_begin, time_end].
const timesOfKml = [
  ['instant', '2017-10-02T05:09:48.000Z', '2017-10-02T05:09:48.000Z'],
  ['a day', '2017-10-02T00:00:00.000Z', '2017-10-02T23:59:59.999Z'],
  ['a span', '2017-09-01T00:00:00.000Z', '2017-10-01T23:59:59.999Z'],
  ['from 2018', '2018-01-01T00:00:00.000Z', null],
  ['gx', '2016-01-01T00:00:00.000Z', '2016-12-31T23:59:59.999Z'],
  ['timeless', null, null]
]

t.test('KML times imported, served in the OGC properties and matched by datetime', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  await importPlacemarks(handle, Readable.from([Buffer.from(kml)]), { timeZone: 'UTC', source: 'times.kml' })
  const app = await buildTestApp(t, handle)
  const items = async (query: string) => app.inject(`/ogc/collections/placemarks/items?limit=100${query}`)
  const names = async (query: string) => ((await items(query)).json().features as { properties: { name: string } }[]).map((f) => f.properties.name)

  const all = (await items('')).json().features as { properties: { name: string; time_begin: string | null; time_end: string | null } }[]
  t.same(all.map((f) => [f.properties.name, f.properties.time_begin, f.properties.time_end]), timesOfKml)
  const one = (await app.inject('/ogc/collections/placemarks/items/1')).json()
  t.equal(one.properties.time_begin, '2017-10-02T05:09:48.000Z')

  t.same(await names('&datetime=2017-10-02T05:09:48Z'), ['instant', 'a day'], 'an instant')
  t.same(await names('&datetime=2017-10-02'), ['instant', 'a day'], 'a date is its day')
  t.same(await names('&datetime=2017-10-01T12:00:00Z/2017-10-01T13:00:00Z'), ['a span'], 'an interval')
  t.same(await names('&datetime=../2016-06-01T00:00:00Z'), ['gx'], 'open start')
  t.same(await names('&datetime=2030-01-01T00:00:00Z/..'), ['from 2018'], 'open end meets an open span')
  t.same(await names('&datetime=2017'), ['instant', 'a day', 'a span'], 'a year')
  t.same(await names('&datetime=1990/..'), ['instant', 'a day', 'a span', 'from 2018', 'gx'], 'every placemark with a time')
  for (const bad of ['../..', 'soon', '2018/2017', '2017/2018/2019']) {
    const res = await items(`&datetime=${encodeURIComponent(bad)}`)
    t.equal(res.statusCode, 400, bad)
    t.match(res.json().message, /querystring\/datetime/)
  }
  const next = (await app.inject('/ogc/collections/placemarks/items?datetime=2017&limit=1')).json().links.find((l: { rel: string }) => l.rel === 'next').href
  t.match(next, /datetime=2017/)

  const collection = (await app.inject('/ogc/collections/placemarks')).json()
  t.same(collection.extent.temporal.interval, [['2016-01-01T00:00:00.000Z', null]], 'from the earliest begin, open at the end')
})

t.test('KML times in the placemark API: JSON and GeoJSON, the list, one placemark and the box on both of its paths', async (t) => {
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, Readable.from([Buffer.from(kml)]), { timeZone: 'UTC', source: 'times.kml' })
  type P = { name: string; time_begin: string | null; time_end: string | null }
  const triple = (p: P) => [p.name, p.time_begin, p.time_end]
  for (const index of ['512', '0']) {
    const app = await buildTestApp(t, handle, {}, { BBOX_INDEX_MB: index })
    await app.boxIndex.idle()
    t.equal(app.boxIndex.state(), index === '0' ? 'off' : 'ready')
    t.same(((await app.inject('/api/v1/placemarks')).json().placemarks as P[]).map(triple), timesOfKml, 'the list')
    t.same(((await app.inject('/api/v1/placemarks?format=geojson')).json().features as { properties: P }[]).map((f) => triple(f.properties)), timesOfKml, 'the list as GeoJSON')
    t.same(triple((await app.inject('/api/v1/placemarks/2')).json() as P), timesOfKml[1], 'one placemark')
    const box = '/api/v1/spatial/bbox?min_lon=-116&min_lat=36&max_lon=-115&max_lat=37'
    t.same(((await app.inject(box)).json().placemarks as P[]).map(triple), timesOfKml, `the box (BBOX_INDEX_MB=${index})`)
    t.same(((await app.inject(`${box}&format=geojson`)).json().features as { properties: P }[]).map((f) => triple(f.properties)), timesOfKml, `the box as GeoJSON (BBOX_INDEX_MB=${index})`)
  }
})
