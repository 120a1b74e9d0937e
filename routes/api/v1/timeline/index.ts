import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { TimelineEvents, TimelineQuery, TimelineResponse } from '../../../../schemas/placemarks.ts'
import { answer, errors, fail } from '../../../../schemas/common.ts'
import { timelineEvents, timelineEventsWithGeometry, type TimelineWindow } from '../../../../db/placemarks.ts'
import { HttpError } from '../../../../lib/errors.ts'
import { parseInstant } from '../../../../lib/activity/instant.ts'
import { collectionText, featureText } from '../../../../lib/geo/geojson.ts'
import { TimelineCollection, TimelineEventsCollection } from '../../../../schemas/geojson.ts'

const description = 'A placemark is an event when its name starts with a date (`M/D/YYYY` or ISO `YYYY-MM-DD`), optionally followed by a time. ' +
  'Names hold local times in the timezone given at import (`--timezone`, default UTC); `timestamp` is that instant in UTC, ' +
  'or null when the name has a date but no valid time. An `M/D/YYYY` time with no AM/PM and an hour of 1..12 is ambiguous: it takes AM or PM from the nearest placemark in document order ' +
  'whose name has the same date and an explicit AM/PM (the earlier on a tie), and the event carries `time_inferred: true`; with no such placemark it is read as 24-hour. Sorted by instant (a date-only event counts as the start of its local day), then id. ' +
  '`from` and `to` keep the events whose instant is in [from, to).'

// The window of `from` and `to`: 400 for a value that is not an instant, or an empty window.
function timelineWindow (request: FastifyRequest): TimelineWindow {
  const { from, to } = request.query as { from?: string; to?: string }
  const window: TimelineWindow = {}
  for (const [name, text] of [['from', from], ['to', to]] as const) {
    if (text === undefined) continue
    const ms = parseInstant(text, { requireZone: false, allowDateOnly: true })
    if (ms === null) throw new HttpError(400, `querystring/${name} must be an ISO 8601 date-time`)
    window[name] = new Date(ms)
  }
  if (window.from && window.to && window.from >= window.to) throw new HttpError(400, 'querystring/from must be before to')
  return window
}

const windowErrors = fail(400, 'A bad `from` or `to`, or `from` not before `to`', 'querystring/from must be an ISO 8601 date-time', 'querystring/from must be before to')

const timeline: FastifyPluginAsyncTypebox = async (app) => {
  // Each event's fields as the properties, its placemark's geometry.
  const timelineFeatures = async (window: TimelineWindow) => (await timelineEventsWithGeometry(app.db, window)).map(({ event, geometry }) => featureText(event.placemark_id, geometry, event))

  app.get('/events', {
    config: { datasetCache: true, geojson: TimelineEventsCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listTimelineEvents',
      summary: 'Timeline events',
      description,
      querystring: TimelineQuery,
      response: { 200: answer(TimelineEvents, 'Every timeline event (of the window), as an array'), ...errors(windowErrors, 429, 503) }
    }
  }, async (request, reply) => {
    const window = timelineWindow(request)
    if (request.wantsGeoJson()) return reply.geojson(collectionText(await timelineFeatures(window)))
    return timelineEvents(app.db, window)
  })

  app.get('/', {
    config: { datasetCache: true, geojson: TimelineCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getTimeline',
      summary: 'Timeline summary',
      description,
      querystring: TimelineQuery,
      response: { 200: answer(TimelineResponse, 'Every timeline event (of the window), with their count'), ...errors(windowErrors, 429, 503) }
    }
  }, async (request, reply) => {
    const window = timelineWindow(request)
    if (request.wantsGeoJson()) {
      const features = await timelineFeatures(window)
      return reply.geojson(collectionText(features, { count: features.length }))
    }
    const events = await timelineEvents(app.db, window)
    return { events, count: events.length }
  })
}

export default timeline
