import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { HttpError } from '../../lib/errors.ts'
import { EventStream, type EventKind } from '../../lib/event-stream.ts'
import { activityData, addActivity, parseActivityChange, type ActivitySummary } from '../../lib/activity/live.ts'

export type ActivityStream = EventStream<ActivitySummary>

/** One open stream: whose, of which guild, until when. */
export interface OpenStream {
  stream: ActivityStream
  guildId: string
  userId: string
  sessionId: string
}

declare module 'fastify' {
  interface FastifyInstance {
    activityStreams: {
      /**
       * A new stream of the guild's activity for the request's caller (the route has checked the guild rule),
       * attached to the reply; 429 when the caller already has STREAM_MAX_PER_USER open on this instance.
       */
      open(request: FastifyRequest, reply: FastifyReply, guildId: string): ActivityStream
      /** The streams open on this instance. */
      list(): OpenStream[]
    }
  }
}

export const STREAM_LIMITS = {
  heartbeatMs: 15_000,
  minIntervalMs: 1000,
  // The socket's own high-water mark: past it the client is not reading.
  maxBufferedBytes: 16 * 1024,
  blockedMs: 30_000
}

// Changes already applied, by load and guild: the bus may deliver one several times (its notification, then
// the fallback reads, which look back up to a few minutes).
const REMEMBERED_CHANGES = 50_000
const REMEMBERED_MS = 10 * 60_000
// setTimeout's longest delay; a later expiry is reached in steps.
const MAX_DELAY_MS = 2 ** 31 - 1

const activity: EventKind<ActivitySummary> = { event: 'activity', merge: addActivity, data: activityData }

/**
 * The guild activity streams of this instance: every `activity` change on the bus (a load on any
 * instance, or a command) is published to the streams of its guild; a stream ends with an `end` event
 * when its access token expires, its session is revoked, or the server stops (before the connections'
 * drain, so that it does not wait for them).
 */
export default fp(async function activityStreams (app: FastifyInstance) {
  // The drain (plugins/app/connections.ts, a preClose hook too) must come after the streams have ended.
  if (app.hasPlugin('connections')) throw new Error('activity-streams must be registered before connections')
  const max = app.config.STREAM_MAX_PER_USER
  const byGuild = new Map<string, Set<OpenStream>>()
  const perUser = new Map<string, number>()
  const all = new Set<OpenStream>()
  const seen = new LRUCache<string, true>({ max: REMEMBERED_CHANGES, ttl: REMEMBERED_MS })

  const end = (open: OpenStream, reason: string) => open.stream.finish('end', { reason })

  app.changes.on('activity', (key) => {
    const change = parseActivityChange(key)
    if (change === null) return
    const id = `${change.load}:${change.guildId}`
    if (seen.has(id)) return
    seen.set(id, true)
    for (const open of byGuild.get(change.guildId) ?? []) open.stream.publish(change)
  })
  app.changes.on('session', (id) => {
    for (const open of all) if (open.sessionId === id) end(open, 'session revoked')
  })
  app.addHook('preClose', async () => {
    for (const open of all) end(open, 'server stopping')
  })

  app.decorate('activityStreams', {
    open (request: FastifyRequest, reply: FastifyReply, guildId: string): ActivityStream {
      const auth = request.auth!
      const mine = perUser.get(auth.userId) ?? 0
      if (mine >= max) throw new HttpError(429, `At most ${max} event streams may be open per user (STREAM_MAX_PER_USER)`)
      const stream: ActivityStream = new EventStream(STREAM_LIMITS, activity)
      stream.attach(reply.raw)
      const open: OpenStream = { stream, guildId, userId: auth.userId, sessionId: auth.sessionId }
      perUser.set(auth.userId, mine + 1)
      all.add(open)
      const guild = byGuild.get(guildId) ?? new Set()
      guild.add(open)
      byGuild.set(guildId, guild)

      // Valid through its `exp` second, as the bearer check counts it.
      const { exp } = app.jwt.access.decode<{ exp: number }>(app.jwt.access.lookupToken(request))!
      let expiry: NodeJS.Timeout
      const expireAt = () => {
        const left = exp * 1000 + 1 - Date.now()
        if (left <= 0) end(open, 'token expired')
        else expiry = setTimeout(expireAt, Math.min(left, MAX_DELAY_MS)).unref()
      }
      expireAt()
      stream.once('close', () => {
        clearTimeout(expiry)
        all.delete(open)
        guild.delete(open)
        if (guild.size === 0 && byGuild.get(guildId) === guild) byGuild.delete(guildId)
        const left = (perUser.get(auth.userId) ?? 1) - 1
        if (left > 0) perUser.set(auth.userId, left)
        else perUser.delete(auth.userId)
      })
      // A revocation announced while the route checked the guild rule.
      if (app.revocations.has(auth.sessionId)) end(open, 'session revoked')
      return stream
    },
    list: () => [...all]
  })
}, { name: 'activity-streams', dependencies: ['config', 'changes', 'auth', 'jwt'] })
