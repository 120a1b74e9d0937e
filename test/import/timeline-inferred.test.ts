import t from 'tap'
import { Readable } from 'node:stream'
import { buildTestApp, dbKinds, importFieldNotes, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'

const LA = 'America/Los_Angeles'
interface Event { name: string; timestamp: string | null; date: string; placemark_id: number; time_inferred?: true }

const kml = (names: string[]) => `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document>${names.map((n, i) => `<Placemark><name>${n}</name><Point><coordinates>-115.17,36.${String(i).padStart(2, '0')}</coordinates></Point></Placemark>`).join('')}</Document></kml>`

for (const kind of dbKinds) {
  t.test(`names' times with no AM/PM take their neighbours' on ${kind}, and say so`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const summary = await importPlacemarks(handle, Readable.from([kml([
      '10/1/2017 10:02:44 PM - Last song',
      '10/1/2017  10:02:52 - 1st Shots',
      'Stage',
      '10/1/2017 9:00 AM - Gates open',
      '10/1/2017 12:15 - Lunch',
      '10/1/2017 13:00 - Sound check',
      '10/2/2017 10:00 - Next day, no AM/PM anywhere'
    ])]), { timeZone: LA, source: 'night.kml' })
    t.equal(summary.inferredTimes, 2)
    const app = await buildTestApp(t, handle)
    const events = (await app.inject('/api/v1/timeline')).json().events as Event[]
    const byName = Object.fromEntries(events.map((e) => [e.name.split(' - ')[1], e]))
    t.same(byName['1st Shots'], { ...byName['1st Shots'], timestamp: '2017-10-02T05:02:52Z', time_inferred: true }, 'PM, from the nearest (the one before)')
    t.same(byName.Lunch, { ...byName.Lunch, timestamp: '2017-10-01T07:15:00Z', time_inferred: true }, 'AM, from the nearer one before it: 12:15 AM')
    t.equal(byName['Sound check'].timestamp, '2017-10-01T20:00:00Z', '13:00 is not ambiguous')
    t.notOk('time_inferred' in byName['Sound check'])
    t.equal(byName['Next day, no AM/PM anywhere'].timestamp, '2017-10-02T17:00:00Z', 'no neighbour with AM/PM: 24-hour')
    t.notOk('time_inferred' in byName['Last song'], 'an explicit time carries no time_inferred')
    t.same(events.map((e) => e.name.split(' - ')[1]), ['Lunch', 'Gates open', 'Sound check', 'Last song', '1st Shots', 'Next day, no AM/PM anywhere'], 'sorted by the inferred instants')
    const window = (await app.inject('/api/v1/timeline?from=2017-10-02T05:00:00Z&to=2017-10-02T06:00:00Z')).json().events as Event[]
    t.same(window.map((e) => e.name.split(' - ')[1]), ['Last song', '1st Shots'], 'the window filters on the inferred instant')
    const features = (await app.inject('/api/v1/timeline/events?f=geojson')).json().features as { properties: Event }[]
    t.equal(features.find((f) => f.properties.name.includes('1st Shots'))?.properties.time_inferred, true, 'in the GeoJSON properties too')
  })
}

t.test('the example KMZ: the night\'s times without PM read as PM', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importFieldNotes(handle)
  const app = await buildTestApp(t, handle)
  const events = (await app.inject('/api/v1/timeline')).json().events as Event[]
  const inferred = events.filter((e) => e.time_inferred)
  t.same(inferred.map((e) => e.name.split(' - ')[1]), ['1st Shots', 'Second volley', 'Traffic stopped on the boulevard', 'Shelter in the hotel lobby', 'Reports from the airport', 'Blood drive opens'])
  t.ok(inferred.slice(0, 5).every((e) => e.timestamp! > '2017-10-02T05:00:00Z' && e.timestamp! < '2017-10-02T06:00:00Z'), 'the night\'s, between 10 and 11 PM local')
  t.equal(inferred[5].timestamp, '2017-10-02T14:15:00Z', 'the morning after: AM')
  const vigil = events.find((e) => e.name.includes('Vigil planned'))!
  t.same([vigil.timestamp, vigil.time_inferred], ['2017-10-03T16:00:00Z', undefined], 'a day with no AM/PM: 24-hour')
})

// Only what is about the Vegas file itself needs it.
t.test('the Vegas KMZ: the seven ambiguous times of the night are PM', { skip: vegasAbsent }, async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  await importVegas(handle)
  const app = await buildTestApp(t, handle)
  const events = (await app.inject('/api/v1/timeline')).json().events as Event[]
  const inferred = events.filter((e) => e.time_inferred)
  t.equal(inferred.length, 7)
  t.ok(inferred.every((e) => e.date === '2017-10-01' && e.timestamp! >= '2017-10-02T05:00:00Z' && e.timestamp! < '2017-10-02T07:00:00Z'), 'all between 10 PM and midnight local')
  const shots = inferred.find((e) => e.name.includes('1st Shots'))!
  t.equal(shots.timestamp, '2017-10-02T05:02:52Z')
})
