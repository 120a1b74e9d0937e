import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import type { FastifyRequest } from 'fastify'
import { STATUS_CODES } from 'node:http'
import { answer, errors, fail } from '../../schemas/common.ts'
import { HttpError } from '../../lib/errors.ts'
import { requiredDurationMs } from '../../lib/duration.ts'
import { clientKey } from '../../lib/address-group.ts'
import { createdAtRule, validateActivityEvent, type ActivityEvent } from '../../lib/activity/event.ts'
import { hashApiKey, looksLikeApiKey } from '../../lib/auth/api-keys.ts'
import { useApiKey } from '../../db/api-keys.ts'
import { loadBatch } from '../../db/activity-load.ts'

export const MAX_BODY_BYTES = 1024 * 1024
const MAX_EVENTS = 1000

declare module 'fastify' {
  interface FastifyRequest {
    // The API key of an ingestion request, once checked.
    apiKey: { id: string; guildIds: string[] } | null
  }
}

const EventIn = Type.Unknown({
  description: [
    'An activity event: `{id?, type, guildId, userId, username, createdAt, channelId?, ...}`, ids at most 64 characters,',
    '`createdAt` ISO 8601 with a zone, from `ACTIVITY_MIN_DATE` (default 2015-01-01) to at most `ACTIVITY_MAX_FUTURE` (default 5',
    'minutes) after the server\'s time. Per type: `message`, `typing`, `message_delete`: `channelId`; `reaction`: `channelId`,',
    'optional `latencyMs` (integer >= 0); `presence`: `status` (online, idle, dnd, offline), optional `clients` (distinct of',
    'desktop, web, mobile; default []); `role_change`: `roleId`, `change` (added, removed); `join`, `leave`: nothing more.',
    'Each event is validated here, not by the schema, so that every invalid one is named by its index.'
  ].join(' ')
})

const IngestBody = Type.Object({
  events: Type.Array(EventIn, { minItems: 1, maxItems: MAX_EVENTS, description: '1 to 1000 events' })
}, {
  additionalProperties: false,
  examples: [{
    events: [
      { id: 'msg-1001', type: 'message', guildId: '700000000000000001', channelId: '720000000000000001', userId: '100000000000000001', username: 'ada', createdAt: '2026-01-01T18:00:00Z' },
      { id: 'pr-77', type: 'presence', guildId: '700000000000000001', userId: '100000000000000002', username: 'grace', createdAt: '2026-01-01T18:00:05Z', status: 'online', clients: ['desktop', 'web'] },
      { type: 'reaction', guildId: '700000000000000001', channelId: '720000000000000001', userId: '100000000000000003', username: 'linus', createdAt: '2026-01-01T18:00:07Z', latencyMs: 1800 }
    ]
  }]
})

const IngestResponse = Type.Object({
  accepted: Type.Integer({ minimum: 0, description: 'Events stored', examples: [3] }),
  duplicates: Type.Integer({ minimum: 0, description: 'Events skipped: their (guildId, id) was stored already, or came earlier in the batch', examples: [0] })
}, { title: 'IngestResult', additionalProperties: false, examples: [{ accepted: 3, duplicates: 0 }] })

const InvalidEvents = Type.Object({
  error: Type.String(),
  message: Type.String(),
  errors: Type.Optional(Type.Array(Type.Object({
    index: Type.Integer({ minimum: 0, description: 'Position of the event in `events`, from 0' }),
    message: Type.String({ description: 'Why it is refused' })
  }, { additionalProperties: false }), { description: 'Every invalid event (absent when the body itself is malformed)' }))
}, { title: 'InvalidEvents', additionalProperties: false })

const invalidMessage = '2 invalid events; nothing was stored'
const badRequest = {
  description: 'Invalid events (each named in `errors`: nothing was stored), or a body that is not `{events: [1..1000]}`',
  content: {
    'application/json': {
      schema: InvalidEvents,
      examples: {
        [invalidMessage]: { value: { error: 'Bad Request', message: invalidMessage, errors: [{ index: 0, message: 'channelId is required for type "message"' }, { index: 4, message: 'createdAt must not be more than 5 minutes in the future (later than 2026-01-01T18:05:00.000Z)' }] } },
        'body/events must NOT have more than 1000 items': { value: { error: 'Bad Request', message: 'body/events must NOT have more than 1000 items' } }
      }
    }
  }
}

const route: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  const createdAtRange = createdAtRule(config)
  app.decorateRequest('apiKey', null)
  const keyOf = (request: FastifyRequest) => {
    const header = request.headers['x-api-key']
    return typeof header === 'string' ? header : null
  }
  const timeWindow = requiredDurationMs('RATE_LIMIT_WINDOW', config.RATE_LIMIT_WINDOW)
  const refused = () => app.appMetrics.rateLimited.inc({ limit: 'apikey' })
  // Each key has its own budget, counted once the key is found (by the key's id).
  const perKey = app.rateLimit({
    max: config.API_KEY_RATE_LIMIT_MAX,
    timeWindow,
    keyGenerator: (request: FastifyRequest) => `apikey:${request.apiKey!.id}`,
    onExceeded: refused
  })
  // A missing, malformed, unknown or revoked key counts against its client (an IPv4 address or an IPv6
  // /64, as the global limit counts it), which is refused before any lookup once past the same budget:
  // guessing keys costs the database no more than a bounded number of lookups per client.
  const addressKey = clientKey()
  const failures = app.createRateLimit({
    max: config.API_KEY_RATE_LIMIT_MAX,
    timeWindow,
    keyGenerator: (request: FastifyRequest) => `apikey-failed:${addressKey(request.ip)}`
  })
  const tooMany = (status: { max: number; ttlInSeconds: number }) => {
    refused()
    const seconds = String(status.ttlInSeconds)
    return new HttpError(429, 'Rate limit exceeded', {
      'retry-after': seconds, 'x-ratelimit-limit': String(status.max), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': seconds
    })
  }
  app.post('/activity', {
    bodyLimit: MAX_BODY_BYTES,
    // The limits replace the global one on this route (above).
    config: { rateLimit: false },
    // The key is checked before the body is read: a caller without a valid key sends no body.
    preParsing: async (request, reply, payload) => {
      const before = await failures(request, { increment: false })
      if (!before.isAllowed && before.isExceeded) throw tooMany(before)
      const key = keyOf(request)
      const found = key && looksLikeApiKey(key) ? await useApiKey(app.db, hashApiKey(key)) : null
      if (!found) {
        const after = await failures(request)
        if (!after.isAllowed && after.isExceeded) throw tooMany(after)
        throw new HttpError(401, key ? 'Invalid API key' : 'Missing X-API-Key header')
      }
      request.apiKey = found
      await perKey.call(app, request, reply)
      return payload
    },
    schema: {
      tags: ['Analytics'],
      operationId: 'ingestActivity',
      summary: 'Send activity events of the key\'s guilds (the guild\'s bot)',
      description: [
        'Stores 1 to 1000 activity events, all or nothing: any invalid event answers 400 with every invalid event named by its',
        'index in `errors`, and nothing is stored; an event of a guild the key is not for answers 403, and nothing is stored.',
        'An event dated more than `ACTIVITY_MAX_FUTURE` (default 5 minutes) after the server\'s time, or before `ACTIVITY_MIN_DATE`',
        '(default 2015-01-01), is invalid: a future date would make it the member\'s latest event (its username answered',
        'everywhere, its counts in every window ending now) until the clock caught up.',
        'An event whose `(guildId, id)` is already stored, or that repeats an `id` earlier in the batch, is a duplicate: counted',
        'in `duplicates` and skipped, so a batch may be re-sent safely. Events without `id` are always stored. The analytics',
        'routes answer with the new events at once.',
        '',
        '**Authentication:** `X-API-Key: <key>` (made by `npm run apikey -- create --name N --guilds G1,G2`); a missing, unknown',
        'or revoked key is 401. No bearer token works here, and an API key works on no other route. The body is at most 1 MiB',
        '(413). Rate limited per key: `API_KEY_RATE_LIMIT_MAX` requests per `RATE_LIMIT_WINDOW`, its own budget. A missing, unknown',
        'or revoked key counts against the client instead (an IPv4 address or an IPv6 /64): past `API_KEY_RATE_LIMIT_MAX` such',
        'failures in a window the client is answered 429 before any key it sends is looked up.'
      ].join('\n'),
      security: [{ apiKeyAuth: [] }],
      body: IngestBody,
      response: {
        200: answer(IngestResponse, 'The events are stored (duplicates skipped)'),
        400: badRequest,
        ...errors(
          fail(401, 'The X-API-Key header is missing, or the key is unknown or revoked', 'Missing X-API-Key header', 'Invalid API key'),
          fail(403, 'An event is of a guild the key is not for; nothing was stored', 'This API key may not send events of guild 700000000000000002'),
          fail(413, 'The body is larger than 1 MiB', 'Request body is too large'),
          { ...fail(429, 'Too many requests with this API key, or too many failed keys from this client, in the current window (API_KEY_RATE_LIMIT_MAX)', 'Rate limit exceeded'), headers: errors(429)[429].headers },
          503)
      }
    }
  }, async (request, reply) => {
    const key = request.apiKey!
    const problems: { index: number; message: string }[] = []
    const events: ActivityEvent[] = []
    const range = createdAtRange(Date.now())
    request.body.events.forEach((raw, index) => {
      const event = validateActivityEvent(raw, range)
      if (typeof event === 'string') problems.push({ index, message: event })
      else events.push(event)
    })
    if (problems.length > 0) {
      const message = `${problems.length} invalid event${problems.length === 1 ? '' : 's'}; nothing was stored`
      return reply.code(400).send({ error: STATUS_CODES[400]!, message, errors: problems } as never)
    }
    const foreign = events.find((e) => !key.guildIds.includes(e.guildId))
    if (foreign) throw new HttpError(403, `This API key may not send events of guild ${foreign.guildId}`)
    const summary = await loadBatch(app.dbHandle, events)
    return { accepted: summary.events, duplicates: summary.duplicates }
  })
}

export default route
