import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../lib/typebox.ts'
import type { FastifyBaseLogger } from 'fastify'
import { ping } from '../db/index.ts'

const BoxIndexState = Type.Union(['off', 'loading', 'ready', 'reloading', 'too-big', 'failed'].map((s) => Type.Literal(s)), {
  description: 'The in-memory box index: off (`BBOX_INDEX_MB=0`), loading (its first load after start), ready, reloading (an import\'s ' +
    'new dataset), too-big (it would pass `BBOX_INDEX_MB`; the log names the size needed), failed (retried every 5 s). Box queries read ' +
    'the database in every state but ready, with the same answers; no state holds up readiness.'
})
const Health = Type.Object({ status: Type.String({ examples: ['ok'] }), box_index: BoxIndexState })

const Reason = Type.Union(['overloaded', 'shutting-down', 'database-unavailable'].map((r) => Type.Literal(r)), {
  description: 'overloaded: the event loop or the heap is past its threshold (requests are being shed); shutting-down: ' +
    'the server is closing; database-unavailable: the database did not answer'
})
const Ready = Type.Object({ status: Type.Literal('ok') }, { description: 'The instance takes traffic' })
const NotReady = Type.Object({
  status: Type.Literal('unavailable'),
  reasons: Type.Array(Reason, { minItems: 1 })
}, { description: 'The instance should get no traffic for now; `reasons` says why', examples: [{ status: 'unavailable', reasons: ['database-unavailable'] }] })

// Load balancers and orchestrators poll these: never rate limited, and answered while load is shed.
const PROBE_MAX_AGE_MS = 1000
const probe = { rateLimit: false, loadShedding: false } as const

const health: FastifyPluginAsyncTypebox = async (app) => {
  // A probe's answer is at most a second old: however often load balancers (or anyone) call, the
  // database is pinged at most once a second, and calls in between share that ping.
  let last: { at: number; answer: Promise<boolean> } | null = null
  const databaseAnswers = (log: FastifyBaseLogger): Promise<boolean> => {
    const now = Date.now()
    if (last && now - last.at < PROBE_MAX_AGE_MS) return last.answer
    const answer = ping(app.dbHandle, app.config.DB_CONNECTION_TIMEOUT_MS).then(() => true, (err: unknown) => {
      log.warn({ code: (err as { code?: string }).code }, 'health check: database did not answer')
      return false
    })
    last = { at: now, answer }
    return answer
  }

  app.get('/health', {
    config: probe,
    schema: {
      operationId: 'getHealth',
      tags: ['Health'],
      summary: 'Liveness: the server and its database',
      description: '`{"status":"ok"}` when the database answers; 503 with `{"status":"unavailable"}` when it does not; either with ' +
        'the state of the in-memory box index (`box_index`). It stays answered while the instance sheds load; use `/health/ready` to ' +
        'decide whether to send it traffic.',
      response: {
        200: { ...Health, description: 'The server runs and the database answers', examples: [{ status: 'ok', box_index: 'ready' }] },
        503: { ...Health, description: 'The database does not answer', examples: [{ status: 'unavailable', box_index: 'loading' }] }
      }
    }
  }, async (request, reply) => {
    if (await databaseAnswers(request.log)) return { status: 'ok', box_index: app.boxIndex.state() }
    return reply.code(503).send({ status: 'unavailable', box_index: app.boxIndex.state() })
  })

  let shuttingDown = false
  app.addHook('preClose', async () => { shuttingDown = true })

  app.get('/health/ready', {
    config: probe,
    schema: {
      operationId: 'getReadiness',
      tags: ['Health'],
      summary: 'Readiness: whether this instance should get traffic',
      description: 'For load balancers: 200 `{"status":"ok"}` when the instance takes traffic; 503 ' +
        '`{"status":"unavailable","reasons":[…]}` while it is overloaded (requests are being answered 503), shutting down, ' +
        'or its database does not answer. The in-memory box index does not hold it up: box queries read the database until it is loaded.',
      response: { 200: Ready, 503: NotReady }
    }
  }, async (request, reply) => {
    // The database first: the other states are read as they are when the answer goes out.
    const database = await databaseAnswers(request.log)
    const reasons: (typeof Reason)['static'][] = []
    if (shuttingDown) reasons.push('shutting-down')
    if (app.overloaded()) reasons.push('overloaded')
    if (!database) reasons.push('database-unavailable')
    if (reasons.length === 0) return { status: 'ok' as const }
    return reply.code(503).send({ status: 'unavailable' as const, reasons })
  })
}

export default health
