import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { TimelineEvent, TimelineResponse } from '../../../../schemas/placemarks.ts'
import { errors } from '../../../../schemas/common.ts'
import { timelineEvents } from '../../../../db/placemarks.ts'

const description = 'A placemark is an event when its name starts with a date (`M/D/YYYY` or ISO `YYYY-MM-DD`), optionally followed by a time. ' +
  'Names hold local times in the timezone given at import (`--timezone`, default UTC); `timestamp` is that instant in UTC, ' +
  'or null when the name has a date but no valid time. Sorted by instant (a date-only event counts as the start of its local day), then id.'

const timeline: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/events', {
    schema: { tags: ['Placemarks'], summary: 'Timeline events', description, response: { 200: Type.Array(TimelineEvent), ...errors(429, 503) } }
  }, async () => timelineEvents(app.db))

  app.get('/', {
    schema: { tags: ['Placemarks'], summary: 'Timeline summary', description, response: { 200: TimelineResponse, ...errors(429, 503) } }
  }, async () => {
    const events = await timelineEvents(app.db)
    return { events, count: events.length }
  })
}

export default timeline
