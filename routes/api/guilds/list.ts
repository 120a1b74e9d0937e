import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { answer, errors, fail, Nullable } from '../../../schemas/common.ts'
import { GUILD_EXAMPLE, windowParams } from '../../../schemas/analytics.ts'
import { guildRuleAllows } from '../../../db/activity.ts'
import { guildListOf, guildTotals } from '../../../db/dashboard.ts'

const Guild = Type.Object({
  guildId: Type.String({ description: 'Guild id at the identity provider', examples: [GUILD_EXAMPLE] }),
  name: Nullable(Type.String({ description: 'The guild\'s name in the caller\'s stored guild list; null when the guild is not in it', examples: ['Placemark Guild'] })),
  icon: Nullable(Type.String({ description: 'The guild\'s icon hash in the caller\'s stored guild list; null when it has none or the guild is not in the list', examples: ['a_1b2c3d4e5f'] })),
  members: Type.Integer({ minimum: 0, description: 'Users with at least one stored event in the guild, all time', examples: [1250] }),
  events: Type.Integer({ minimum: 0, description: 'Stored events of the guild, all time', examples: [48210] }),
  lastEventAt: Nullable(Type.String({ format: 'date-time', description: 'The greatest createdAt of the guild\'s events; null without events', examples: ['2026-01-01T09:30:00.000Z'] }))
}, { title: 'DashboardGuild', additionalProperties: false })

const GuildsResponse = Type.Object({
  guilds: Type.Array(Guild),
  count: Type.Integer({ minimum: 0, description: 'Number of entries in `guilds`' })
}, {
  title: 'DashboardGuilds',
  additionalProperties: false,
  examples: [{
    guilds: [
      { guildId: GUILD_EXAMPLE, name: 'Placemark Guild', icon: null, members: 1250, events: 48210, lastEventAt: '2026-01-01T09:30:00.000Z' },
      { guildId: '700000000000000002', name: 'Quiet Corner', icon: 'a_1b2c3d4e5f', members: 0, events: 0, lastEventAt: null }
    ],
    count: 2
  }]
})

const route: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/', {
    schema: {
      tags: ['Analytics'],
      operationId: 'listReadableGuilds',
      summary: 'The guilds the caller may read, with their activity totals',
      description: [
        'For role `USER`: the guilds of the caller\'s stored guild list (from their latest sign-in) that pass the guild rule',
        '(owner, ADMINISTRATOR 0x8 or MANAGE_GUILD 0x20). For role `ADMIN`: every guild of their list, and every guild with a',
        'stored event. `name` and `icon` come from the caller\'s list (null for a guild not in it); `members`, `events` and',
        '`lastEventAt` count all stored events of the guild. Sorted by `events` desc, then `guildId` byte by byte; at most `limit`.'
      ].join('\n'),
      security: [{ bearerAuth: [] }],
      querystring: Type.Object({ limit: windowParams.limit }),
      response: {
        200: answer(GuildsResponse, 'The readable guilds, busiest first'),
        ...errors(fail(400, 'limit is out of range or malformed, or a parameter is unknown', 'querystring/limit must be <= 1000'), 401, 429, 503)
      }
    }
  }, async (request) => {
    const { limit = 100 } = request.query
    const list = await guildListOf(app.db, request.auth!.userId)
    if (list === null) return { guilds: [], count: 0 }
    const readable = list.guilds.filter((g) => guildRuleAllows(list.role, g))
    const totals = await guildTotals(app.db, { guildIds: readable.map((g) => g.guildId), everyGuild: list.role === 'ADMIN', limit })
    const entries = new Map(list.guilds.map((g) => [g.guildId, g]))
    const guilds = totals.map((t) => {
      const entry = entries.get(t.guildId)
      return { guildId: t.guildId, name: entry?.name ?? null, icon: entry?.icon ?? null, members: t.members, events: t.events, lastEventAt: t.lastEventAt }
    })
    return { guilds, count: guilds.length }
  })
}

export default route
