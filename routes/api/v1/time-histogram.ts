import { Type } from '../../../lib/typebox.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { ItemsQuery } from '../../../schemas/ogc.ts'
import { timeHistogram } from '../../../db/ogc.ts'
import { HttpError } from '../../../lib/errors.ts'
import { MAX_INSTANT, parseInstant } from '../../../lib/activity/instant.ts'

// Periods of one answer, and the longest period (100 years).
const MAX_BINS = 100
const MAX_STEP_MS = 100 * 366 * 86_400_000

const HistogramQuery = Type.Object({
  start: Type.String({ maxLength: 40, description: 'The first period\'s start: an RFC 3339 date-time with its zone', examples: ['2017-10-01T00:00:00Z'] }),
  step: Type.Integer({ minimum: 1, maximum: MAX_STEP_MS, description: 'Each period\'s length in milliseconds, 1 ms to 100 years', examples: [3_600_000] }),
  bins: Type.Integer({ minimum: 1, maximum: MAX_BINS, description: `How many periods, 1..${MAX_BINS}`, examples: [24] }),
  folder: ItemsQuery.properties.folder,
  q: ItemsQuery.properties.q
}, { additionalProperties: false })

const TimeHistogram = Type.Object({
  start: Type.String({ description: 'The first period\'s start, as an RFC 3339 instant in UTC' }),
  step: Type.Integer({ description: 'Each period\'s length, ms' }),
  counts: Type.Array(Type.Integer({ minimum: 0 }), { description: 'Per period, the placemarks matching `folder` and `q` whose KML time intersects it' })
})

const badStart = fail(400, 'A `start` that is not an RFC 3339 date-time with a zone, or periods past the year 9999', 'querystring/start must be an RFC 3339 date-time with its zone', 'querystring/bins and step reach past the year 9999')

const histogram: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/time-histogram', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getTimeHistogram',
      summary: 'Placemarks per period of time',
      description: 'The histogram of the placemarks\' KML times: `bins` consecutive periods of `step` milliseconds from `start`, ' +
        'period i being the OGC `datetime` interval from its first to its last millisecond, [start + i·step, start + (i + 1)·step − 1 ms]. ' +
        'Each count is the placemarks matching `folder` and `q` whose time (a TimeStamp, or a TimeSpan with either end open) intersects that period: ' +
        'what `/ogc/collections/placemarks/items` gives as `numberMatched` for the same filters and that `datetime`. A placemark whose time spans several periods counts in each. ' +
        'The map page\'s time bar draws it in one request.',
      querystring: HistogramQuery,
      response: { 200: answer(TimeHistogram, 'The counts, one per period'), ...errors(badStart, 429, 503) }
    }
  }, async (request) => {
    const { start: text, step, bins, folder, q } = request.query
    const start = parseInstant(text, { requireZone: true, allowDateOnly: false })
    if (start === null) throw new HttpError(400, 'querystring/start must be an RFC 3339 date-time with its zone')
    if (start + bins * step - 1 > MAX_INSTANT) throw new HttpError(400, 'querystring/bins and step reach past the year 9999')
    return { start: new Date(start).toISOString(), step, counts: await timeHistogram(app.db, { folder, q }, start, step, bins) }
  })
}

export default histogram
