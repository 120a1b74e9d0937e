import t from 'tap'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'
import app, { serverOptions } from '../../app.ts'
import { openTestDatabase, testConfig } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'

interface Seen { onRequest: number; onSend: number; onResponse: number }

// A plugin a user adds after the app, as a metrics, tracing or audit plugin would be.
const recorder = fp(async (server: FastifyInstance, opts: { seen: Map<string, Seen> }) => {
  const entry = (id: string) => {
    let seen = opts.seen.get(id)
    if (!seen) opts.seen.set(id, seen = { onRequest: 0, onSend: 0, onResponse: 0 })
    return seen
  }
  server.addHook('onRequest', async (request) => { entry(request.id).onRequest++ })
  server.addHook('onSend', async (request, reply, payload) => {
    entry(request.id).onSend++
    reply.header('x-recorded', request.id)
    return payload
  })
  server.addHook('onResponse', async (request) => { entry(request.id).onResponse++ })
}, { name: 'recorder' })

t.test('a plugin registered after the app sees and decorates every kind of answer', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, { sample: true })
  const config = testConfig({ AUTH_RATE_LIMIT_MAX: 6 }, idp.env())
  const server = Fastify({ ...serverOptions(config), logger: false })
  await server.register(fp(app, { name: 'app' }), { config, db: handle })
  const seen = new Map<string, Seen>()
  await server.register(recorder, { seen })
  await server.register(helmet)
  await server.ready()
  t.teardown(() => server.close())

  const signIn = (await server.inject('/api/auth/identity?code=good')).json() as { accessToken: string }
  const bearer = { authorization: `Bearer ${signIn.accessToken}` }
  await server.inject('/api/v1/stats')
  const hit = await server.inject('/api/v1/stats')
  const cases: Record<string, string | InjectOptions> = {
    'cached miss': '/api/v1/placemarks?limit=5',
    'cached hit': '/api/v1/stats',
    'cached hit, gzip': { url: '/api/v1/timeline', headers: { 'accept-encoding': 'gzip' } },
    'not modified': { url: '/api/v1/stats', headers: { 'if-none-match': String(hit.headers.etag) } },
    'HEAD of a cached answer': { method: 'HEAD', url: '/api/v1/stats' },
    'the signed-in user (cached profile)': { url: '/api/auth/me', headers: bearer },
    'the signed-in user again': { url: '/api/auth/me', headers: bearer },
    'a refused token': { url: '/api/auth/me', headers: { authorization: 'Bearer nope' } },
    'a bad query': '/api/v1/placemarks?limit=0',
    'an unknown query parameter': '/api/v1/stats?fresh=1',
    'an unknown placemark': '/api/v1/placemarks/999999',
    'an unknown route': '/nowhere',
    'a preflight': { method: 'OPTIONS', url: '/api/v1/stats', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' } },
    'the health check': '/health',
    'a box query': '/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=5',
    'the docs': '/api/docs/json'
  }
  for (let i = 0; i < 6; i++) await server.inject({ url: '/api/auth/sessions', headers: bearer })
  cases['a refusal by the rate limit'] = { url: '/api/auth/me', headers: bearer }

  for (const [label, request] of Object.entries(cases)) {
    const res = await server.inject(request)
    const id = res.headers['x-recorded']
    t.ok(id, `${label}: the extra onSend hook decorated it (${res.statusCode})`)
    t.same(seen.get(String(id)), { onRequest: 1, onSend: 1, onResponse: 1 }, `${label}: each hook ran once`)
    if (!res.headers['x-content-type-options']) console.error(label, res.statusCode, res.headers, seen.get(String(id)))
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${label}: helmet's headers are on it`)
    t.ok(res.headers['content-security-policy'], `${label}: helmet's CSP is on it`)
  }
  t.equal((await server.inject({ url: '/api/auth/me', headers: bearer })).statusCode, 429, 'the limit was reached')
})
