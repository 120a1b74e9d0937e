import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, GUILD_EXAMPLE, rules, windowQuery } from '../../schemas/analytics.ts'
import { HttpError } from '../../lib/errors.ts'
import { DAY_MS, isIanaTimeZone } from '../../lib/activity/analytics.ts'
import { ACTIVITY_TYPES } from '../../lib/activity/event.ts'
import { overviewChannels, overviewDays, type TypeCounts } from '../../db/dashboard.ts'

const MAX_SPAN_DAYS = 400
const DEFAULT_SPAN_DAYS = 30

const count = (description: string, example: number) => Type.Integer({ minimum: 0, description, examples: [example] })
const typeCounts = {
  message: count('`message` events', 420),
  typing: count('`typing` events', 1310),
  message_delete: count('`message_delete` events', 12),
  reaction: count('`reaction` events', 96),
  presence: count('`presence` events', 2400),
  role_change: count('`role_change` events', 3),
  join: count('`join` events', 2),
  leave: count('`leave` events', 1)
}

const Totals = Type.Object({
  events: count('Events of the window', 4244),
  members: count('Distinct users with an event in the window', 87),
  ...typeCounts
}, { additionalProperties: false })

const Day = Type.Object({
  date: Type.String({ format: 'date', description: 'A local date in `timeZone` (YYYY-MM-DD)', examples: ['2025-12-24'] }),
  events: count('Events of the window on this local date', 140),
  members: count('Distinct users with an event of the window on this local date', 31),
  ...typeCounts
}, { additionalProperties: false })

const Channel = Type.Object({
  channelId: Type.String({ description: 'Channel id', examples: ['720000000000000001'] }),
  messages: count('`message` events in the window', 420),
  typing: count('`typing` events in the window', 1310),
  reactions: count('`reaction` events in the window', 96)
}, { additionalProperties: false })

const example = (events: number, members: number, n: number[]) => ({ events, members, ...Object.fromEntries(ACTIVITY_TYPES.map((t, i) => [t, n[i]])) })
const OverviewResponse = Type.Object({
  ...echo,
  since: Type.String({ format: 'date-time', description: 'The effective start of the window (UTC): `since`, or 30 days before `until`' }),
  timeZone: Type.String({ description: 'The time zone of `days`', examples: ['Europe/Paris'] }),
  totals: Totals,
  days: Type.Array(Day, { description: 'Every local date from the date of `since` to the date of the last instant before `until`, in date order' }),
  channels: Type.Array(Channel, { description: 'The `limit` channels with most messages + typing + reactions, desc, then channelId' })
}, {
  title: 'GuildOverview',
  additionalProperties: false,
  examples: [{
    guildId: GUILD_EXAMPLE,
    since: '2025-12-23T23:00:00.000Z',
    until: '2025-12-25T23:00:00.000Z',
    timeZone: 'Europe/Paris',
    totals: example(9, 3, [3, 2, 0, 1, 2, 0, 1, 0]),
    days: [{ date: '2025-12-24', ...example(9, 3, [3, 2, 0, 1, 2, 0, 1, 0]) }, { date: '2025-12-25', ...example(0, 0, [0, 0, 0, 0, 0, 0, 0, 0]) }],
    channels: [{ channelId: '720000000000000001', messages: 3, typing: 2, reactions: 1 }]
  }]
})

const badZone = (timeZone: string) => new HttpError(400, `querystring/timeZone: unknown time zone ${JSON.stringify(timeZone)}`)

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/overview', {
    schema: {
      tags: ['Analytics'],
      operationId: 'getGuildOverview',
      summary: 'A guild\'s activity over a window: totals, every local date, the busiest channels',
      description: [
        '`totals`: the window\'s events, distinct members and events of each of the eight types (0 when none). `days`: one entry',
        'for every local date in `timeZone` (IANA name, default UTC; an offset such as `+02:00` is refused) from the date of',
        '`since` to the date of the last instant before `until`, dates without events included, each counting the window\'s',
        'events of that local date (a DST change makes a date of 23 or 25 hours). `channels`: the `limit` channels with most',
        '`message` + `typing` + `reaction` events in the window, by that sum desc, then channelId byte by byte.',
        `\`since\` defaults to ${DEFAULT_SPAN_DAYS} days before \`until\` (echoed); a window longer than ${MAX_SPAN_DAYS} days is 400.`,
        rules()
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({
        timeZone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'IANA time zone of the local dates (default UTC)', examples: ['Europe/Paris'] }))
      }),
      response: {
        200: answer(OverviewResponse, 'The guild\'s window, day by day'),
        ...analyticsErrors('querystring/timeZone: unknown time zone "Mars/Olympus"', `querystring/since: the window from since to until must be at most ${MAX_SPAN_DAYS} days`)
      }
    }
  }, async (request) => {
    const { guildId, limit = 100, timeZone = 'UTC' } = request.query
    if (!isIanaTimeZone(timeZone)) throw badZone(timeZone)
    const w = await app.analyticsWindow(request, { ...request.query, defaultSpanMs: DEFAULT_SPAN_DAYS * DAY_MS, maxSpanDays: MAX_SPAN_DAYS })
    const since = w.since!
    let days, channels
    try {
      [days, channels] = await Promise.all([
        overviewDays(app.db, { guildId, since, until: w.until, timeZone }),
        overviewChannels(app.db, { guildId, since, until: w.until, limit })
      ])
    } catch (err) {
      // A name Intl knows and PostgreSQL does not.
      if ((err as { code?: string }).code === '22023') throw badZone(timeZone)
      throw err
    }
    const totals = { events: 0, members: days.members } as TypeCounts & { events: number; members: number }
    for (const type of ACTIVITY_TYPES) totals[type] = 0
    for (const day of days.days) {
      totals.events += day.events
      for (const type of ACTIVITY_TYPES) totals[type] += day[type]
    }
    return { guildId, since: new Date(since).toISOString(), until: new Date(w.until).toISOString(), timeZone, totals, days: days.days, channels }
  })
}

export default route
