import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { answer } from '../../schemas/common.ts'
import { analyticsErrors, echo, rules, windowQuery } from '../../schemas/analytics.ts'
import { HttpError } from '../../lib/errors.ts'
import { compareBytes, isIanaTimeZone } from '../../lib/activity/analytics.ts'
import { heatCells } from '../../db/analytics.ts'

const channelId = Type.String({ description: 'Channel id', examples: ['720000000000000001'] })
const Channel = Type.Object({
  channelId,
  messages: Type.Integer({ minimum: 0, examples: [120] }),
  typing: Type.Integer({ minimum: 0, examples: [340] })
}, { additionalProperties: false })
const Cell = Type.Object({
  channelId,
  dayOfWeek: Type.Integer({ minimum: 0, maximum: 6, description: '0 = Monday .. 6 = Sunday, in the time zone', examples: [4] }),
  hour: Type.Integer({ minimum: 0, maximum: 23, description: 'Local hour in the time zone', examples: [21] }),
  messages: Type.Integer({ minimum: 0, examples: [7] }),
  typing: Type.Integer({ minimum: 0, examples: [19] })
}, { additionalProperties: false })

const HeatmapResponse = Type.Object({
  ...echo,
  channels: Type.Array(Channel),
  cells: Type.Array(Cell)
}, {
  title: 'Heatmap',
  additionalProperties: false,
  examples: [{
    guildId: '700000000000000001',
    since: null,
    until: '2026-01-01T00:00:00.000Z',
    channels: [{ channelId: '720000000000000001', messages: 120, typing: 340 }],
    cells: [{ channelId: '720000000000000001', dayOfWeek: 4, hour: 21, messages: 7, typing: 19 }]
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/heatmap', {
    schema: {
      tags: ['Analytics'],
      operationId: 'getGuildHeatmap',
      summary: 'Channel heatmap: messages and typing per channel and local hour of the week',
      description: [
        '`message` and `typing` events of the window per channel, local day of the week and local hour in `timeZone`',
        '(IANA name, default UTC; an offset such as `+02:00` is refused: use a zone name). `channels`: the `limit` channels',
        'with most messages + typing (desc, then channelId byte order). `cells`: the non-zero cells of those channels,',
        'sorted by channelId, dayOfWeek (0 = Monday), hour. Across a DST change each event counts in its own local hour',
        '(the repeated hour of the autumn change holds both, the skipped hour of the spring change none).',
        rules()
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: windowQuery({
        timeZone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'IANA time zone of the cells (default UTC)', examples: ['Europe/Paris'] }))
      }),
      response: {
        200: answer(HeatmapResponse, 'The busiest channels and their hours of the week'),
        ...analyticsErrors('querystring/timeZone: unknown time zone "Mars/Olympus"')
      }
    }
  }, async (request) => {
    const { guildId, limit = 100, timeZone = 'UTC' } = request.query
    if (!isIanaTimeZone(timeZone)) throw new HttpError(400, `querystring/timeZone: unknown time zone ${JSON.stringify(timeZone)}`)
    const w = await app.analyticsWindow(request, request.query)
    let cells
    try {
      cells = await heatCells(app.db, { guildId, ...w, timeZone })
    } catch (err) {
      // A name Intl knows and PostgreSQL does not.
      if ((err as { code?: string }).code === '22023') throw new HttpError(400, `querystring/timeZone: unknown time zone ${JSON.stringify(timeZone)}`)
      throw err
    }
    const totals = new Map<string, { channelId: string; messages: number; typing: number }>()
    for (const c of cells) {
      const t = totals.get(c.channelId) ?? { channelId: c.channelId, messages: 0, typing: 0 }
      t.messages += c.messages
      t.typing += c.typing
      totals.set(c.channelId, t)
    }
    const channels = [...totals.values()]
      .sort((a, b) => (b.messages + b.typing) - (a.messages + a.typing) || compareBytes(a.channelId, b.channelId))
      .slice(0, limit)
    const kept = new Set(channels.map((c) => c.channelId))
    return {
      guildId,
      since: w.since === null ? null : new Date(w.since).toISOString(),
      until: new Date(w.until).toISOString(),
      channels,
      cells: cells.filter((c) => kept.has(c.channelId))
    }
  })
}

export default route
