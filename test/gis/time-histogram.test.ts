/**
 * The time histogram: every count equals what the OGC items give as numberMatched for the same filters
 * and that period's datetime, for instants, dates, months, years, spans open at either end and times
 * on the periods' edges, on both databases; its mistakes are 400s.
 */
import t from 'tap'
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { mulberry32 } from '../../scripts/generate-kml.ts'

const DAY = 86_400_000
const BASE = Date.UTC(2017, 9, 1)

/** Placemarks with every kind of KML time (and none), in two folders, names with and without "beacon". */
function datasetKml (): string {
  const rand = mulberry32(5)
  const iso = (ms: number) => new Date(ms).toISOString()
  const times: string[] = [
    '<TimeStamp><when>2017</when></TimeStamp>',
    '<TimeStamp><when>2017-10</when></TimeStamp>',
    '<TimeStamp><when>2017-10-03</when></TimeStamp>',
    '<TimeSpan><begin>2017-10-02</begin></TimeSpan>',
    '<TimeSpan><end>2017-10-04T12:00:00Z</end></TimeSpan>',
    '<TimeSpan><begin>2017-10-05T00:00:00Z</begin><end>2017-10-05T00:00:00Z</end></TimeSpan>',
    // On the edges of day-long periods from BASE: the first and last millisecond of a day.
    `<TimeStamp><when>${iso(BASE + 2 * DAY)}</when></TimeStamp>`,
    `<TimeStamp><when>${iso(BASE + 3 * DAY - 1)}</when></TimeStamp>`,
    `<TimeSpan><begin>${iso(BASE + DAY - 1)}</begin><end>${iso(BASE + DAY)}</end></TimeSpan>`,
    ''
  ]
  let kml = '<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n'
  for (let k = 0; k < 400; k++) {
    let time = times[k % times.length]
    if (k >= 100) {
      // Random instants and spans over three weeks around BASE, to the millisecond and to the microsecond.
      const a = BASE - 7 * DAY + Math.floor(rand() * 21 * DAY)
      const b = a + Math.floor(rand() * 4 * DAY)
      const frac = k % 3 === 0 ? '.123456' : ''
      time = k % 2 === 0
        ? `<TimeStamp><when>${iso(a).replace('.000', frac)}</when></TimeStamp>`
        : `<TimeSpan><begin>${iso(a)}</begin><end>${iso(b)}</end></TimeSpan>`
    }
    kml += `<Folder><name>${k % 2 === 0 ? 'Even' : 'Odd'}</name><Placemark><name>${k % 5 === 0 ? 'Beacon' : 'Place'} ${k}</name>${time}<Point><coordinates>${k / 100},1,0</coordinates></Point></Placemark></Folder>\n`
  }
  return kml + '</Document></kml>\n'
}

async function matched (app: FastifyInstance, query: Record<string, string>): Promise<number> {
  const res = await app.inject(`/ogc/collections/placemarks/items?${new URLSearchParams({ ...query, limit: '1' })}`)
  return res.json().numberMatched as number
}

for (const kind of ['postgres', 'pglite'] as const) {
  t.test(`each count is the items' numberMatched for that period, on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    await importPlacemarks(handle, Readable.from([datasetKml()]), { timeZone: 'UTC', source: 'times.kml' })
    const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1_000_000 })
    const cases: [number, number, number, Record<string, string>][] = [
      [BASE, DAY, 7, {}],
      [BASE - 10 * DAY, 3 * DAY, 12, { folder: 'Even' }],
      [BASE + DAY - 2, 1, 4, {}],
      [Date.UTC(2016, 0, 1), 180 * DAY, 5, { q: 'beacon' }],
      [BASE + 3600_000, 3600_000 * 7, 20, { folder: 'Odd', q: 'place' }]
    ]
    for (const [start, step, bins, filters] of cases) {
      const res = await app.inject(`/api/v1/time-histogram?${new URLSearchParams({ ...filters, start: new Date(start).toISOString(), step: String(step), bins: String(bins) })}`)
      t.equal(res.statusCode, 200)
      const body = res.json()
      t.equal(body.start, new Date(start).toISOString())
      t.equal(body.counts.length, bins)
      const want: number[] = []
      for (let i = 0; i < bins; i++) {
        want.push(await matched(app, { ...filters, datetime: `${new Date(start + i * step).toISOString()}/${new Date(start + (i + 1) * step - 1).toISOString()}` }))
      }
      t.same(body.counts, want, `${new Date(start).toISOString()}, ${bins} × ${step} ms, ${JSON.stringify(filters)}: ${want.join(' ')}`)
    }
    t.ok((await app.inject('/api/v1/time-histogram?start=2017-10-01T00:00:00Z&step=86400000&bins=3')).json().counts.some((n: number) => n > 0))
  })
}

t.test('mistakes are 400s', async (t) => {
  const handle = await openTestDatabase(t, 'postgres')
  const app = await buildTestApp(t, handle)
  for (const [query, message] of [
    ['start=yesterday&step=1000&bins=3', /start must be an RFC 3339 date-time/],
    ['start=2017-10-01T00:00:00&step=1000&bins=3', /start must be an RFC 3339 date-time with its zone/],
    ['start=2017-10-01T00:00:00Z&step=0&bins=3', /step/],
    ['start=2017-10-01T00:00:00Z&step=1000&bins=101', /bins/],
    ['start=2017-10-01T00:00:00Z&step=1000', /bins/],
    ['start=9999-12-31T00:00:00Z&step=86400000&bins=2', /past the year 9999/],
    ['start=2017-10-01T00:00:00Z&step=1000&bins=3&limit=3', /limit/]
  ] as const) {
    const res = await app.inject(`/api/v1/time-histogram?${query}`)
    t.equal(res.statusCode, 400, query)
    t.match(res.json(), { error: 'Bad Request', message }, query)
  }
})
