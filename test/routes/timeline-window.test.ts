import t from 'tap'
import { buildTestApp, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'

interface Event { timestamp: string | null; date: string; placemark_id: number }

t.test('the timeline of a window: events whose instant is in [from, to)', { skip: vegasAbsent }, async (t) => {
  const handle = await openTestDatabase(t)
  await importVegas(handle)
  const app = await buildTestApp(t, handle)
  const all = (await app.inject('/api/v1/timeline/events')).json() as Event[]
  t.ok(all.length > 100, `${all.length} events`)
  // An event's instant as the sort has it: its timestamp, or the start of its local day (Los Angeles) for a date alone.
  const instant = (e: Event) => e.timestamp ? Date.parse(e.timestamp) : Date.parse(`${e.date}T00:00:00-07:00`)
  const expected = (from: number, to: number) => all.filter((e) => instant(e) >= from && instant(e) < to).map((e) => e.placemark_id)

  const cases: [string, number, number][] = [
    ['from=2017-10-02T05:00:00Z&to=2017-10-02T05:30:00Z', Date.parse('2017-10-02T05:00:00Z'), Date.parse('2017-10-02T05:30:00Z')],
    ['from=2017-10-02', Date.parse('2017-10-02T00:00:00Z'), Infinity],
    ['to=2017-10-02T05:10:00', -Infinity, Date.parse('2017-10-02T05:10:00Z')],
    ['from=2017-10-01T00:00:00-07:00&to=2017-10-02T00:00:00-07:00', Date.parse('2017-10-01T07:00:00Z'), Date.parse('2017-10-02T07:00:00Z')],
    ['from=2030-01-01', Date.parse('2030-01-01T00:00:00Z'), Infinity]
  ]
  for (const [query, from, to] of cases) {
    const want = expected(from, to)
    const events = (await app.inject(`/api/v1/timeline/events?${query}`)).json() as Event[]
    t.same(events.map((e) => e.placemark_id), want, `${query}: ${want.length} events`)
    const summary = (await app.inject(`/api/v1/timeline?${query}`)).json() as { events: Event[]; count: number }
    t.equal(summary.count, want.length)
    const geo = (await app.inject(`/api/v1/timeline?${query}&format=geojson`)).json() as { features: unknown[]; count: number }
    t.equal(geo.features.length, want.length, `${query}: the GeoJSON answer too`)
  }
  const dateOnly = all.find((e) => e.timestamp === null)
  if (dateOnly) {
    const start = new Date(instant(dateOnly)).toISOString()
    t.ok((await app.inject(`/api/v1/timeline/events?from=${start}&to=${new Date(instant(dateOnly) + 1).toISOString()}`)).json().some((e: Event) => e.placemark_id === dateOnly.placemark_id), 'a date-only event is at the start of its local day')
  }
  for (const [query, message] of [
    ['from=yesterday', 'querystring/from must be an ISO 8601 date-time'],
    ['to=2017-02-30', 'querystring/to must be an ISO 8601 date-time'],
    ['from=2017-10-02&to=2017-10-02', 'querystring/from must be before to'],
    ['from=2017-10-03&to=2017-10-02', 'querystring/from must be before to']
  ]) {
    const res = await app.inject(`/api/v1/timeline?${query}`)
    t.same([res.statusCode, res.json()], [400, { error: 'Bad Request', message }], query)
  }
})
