import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { TimelineEvents, TimelineResponse } from '../../../../schemas/placemarks.ts'
import { answer, errors } from '../../../../schemas/common.ts'
import { timelineEvents, timelineEventsWithGeometry } from '../../../../db/placemarks.ts'
import { collectionText, featureText } from '../../../../lib/geo/geojson.ts'
import { TimelineCollection, TimelineEventsCollection } from '../../../../schemas/geojson.ts'

const description = 'A placemark is an event when its name starts with a date (`M/D/YYYY` or ISO `YYYY-MM-DD`), optionally followed by a time. ' +
  'Names hold local times in the timezone given at import (`--timezone`, default UTC); `timestamp` is that instant in UTC, ' +
  'or null when the name has a date but no valid time. Sorted by instant (a date-only event counts as the start of its local day), then id.'

const timeline: FastifyPluginAsyncTypebox = async (app) => {
  // Each event's fields as the properties, its placemark's geometry.
  const timelineFeatures = async () => (await timelineEventsWithGeometry(app.db)).map(({ event, geometry }) => featureText(event.placemark_id, geometry, event))

  app.get('/events', {
    config: { datasetCache: true, geojson: TimelineEventsCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listTimelineEvents',
      summary: 'Timeline events',
      description,
      response: { 200: answer(TimelineEvents, 'Every timeline event, as an array'), ...errors(429, 503) }
    }
  }, async (request, reply) => {
    if (request.wantsGeoJson()) return reply.geojson(collectionText(await timelineFeatures()))
    return timelineEvents(app.db)
  })

  app.get('/', {
    config: { datasetCache: true, geojson: TimelineCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getTimeline',
      summary: 'Timeline summary',
      description,
      response: { 200: answer(TimelineResponse, 'Every timeline event, with their count'), ...errors(429, 503) }
    }
  }, async (request, reply) => {
    if (request.wantsGeoJson()) {
      const features = await timelineFeatures()
      return reply.geojson(collectionText(features, { count: features.length }))
    }
    const events = await timelineEvents(app.db)
    return { events, count: events.length }
  })
}

export default timeline
