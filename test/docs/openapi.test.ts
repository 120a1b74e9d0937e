import t from 'tap'
import SwaggerParser from '@apidevtools/swagger-parser'
import type { FastifyInstance } from 'fastify'
import { buildApp, buildTestApp, openTestDatabase, testConfig } from '../helper.ts'
import { DEMO_GUILD_ID } from '../../lib/dev-idp/demo-data.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { conventionProblems, routeCollector, type OpenApiDocument } from './conventions.ts'

// The seed's paths (placemark API and session API), the health checks and what the service added, exactly as documented.
const expectedPaths = [
  '/health', '/health/ready', '/.well-known/jwks.json',
  '/api/auth/identity/login', '/api/auth/identity', '/api/auth/refresh', '/api/auth/logout', '/api/auth/me',
  '/api/auth/sessions', '/api/auth/sessions/{id}', '/api/auth/history', '/api/auth/me/export', '/api/ghosts',
  '/api/admin/users', '/api/admin/users/{id}', '/api/admin/users/{id}/sessions', '/api/admin/audit',
  '/api/lurkers', '/api/heatmap', '/api/roles', '/api/clients', '/api/shifts', '/api/suspicion', '/api/members/{userId}/activity', '/api/activity',
  '/api/guilds', '/api/overview', '/api/guilds/{guildId}/events',
  '/api/v1/stats', '/api/v1/placemarks', '/api/v1/placemarks/{id}', '/api/v1/timeline/events', '/api/v1/timeline',
  '/api/v1/spatial/bbox', '/api/v1/folders', '/api/v1/export.kml', '/api/v1/export.kmz', '/api/v1/tiles/{z}/{x}/{y}.mvt', '/api/v1/tiles.json',
  '/ogc', '/ogc/conformance', '/ogc/api', '/ogc/collections', '/ogc/collections/placemarks', '/ogc/collections/placemarks/queryables',
  '/ogc/collections/placemarks/items', '/ogc/collections/placemarks/items/{featureId}', '/ogc/collections/placemarks/schema', '/api/v1/icons', '/api/v1/icons/{*}', '/api/v1/time-histogram'
]

t.test('the served document is valid, follows the conventions on every route, and lists the seed\'s paths', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const collector = routeCollector()
  const app = await buildApp({ config: testConfig({}), db: handle, logger: false, onRoute: collector.onRoute })
  await app.ready()
  t.teardown(() => app.close())

  const res = await app.inject('/api/docs/json')
  t.equal(res.statusCode, 200)
  const doc = res.json()
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'valid OpenAPI 3')
  t.ok(doc.components.securitySchemes.bearerAuth, 'bearer scheme for the Authorize dialog')

  t.ok(collector.routes.length >= 17, `${collector.routes.length} documented routes checked`)
  t.same(conventionProblems(doc, collector.routes), [], 'every route follows the conventions')
  t.same(Object.keys(doc.paths).sort(), [...expectedPaths].sort(), 'the seed\'s paths, no trailing slash')

  // The shared shapes are defined once and referred to.
  const schemas = Object.keys(doc.components.schemas)
  for (const name of ['Error', 'Placemark', 'PlacemarkWithExtendedData', 'TimelineEvent', 'User', 'Guild', 'UserWithGuilds', 'Session']) {
    t.ok(schemas.includes(name), `components.schemas.${name}`)
  }
  const text = JSON.stringify(doc.paths)
  const jsonAnswers = Object.values(doc.paths).flatMap((ops: any) => Object.values(ops)).flatMap((op: any) => Object.values(op.responses))
    .map((r: any) => JSON.stringify(r.content?.['application/json'] ?? null)).join()
  t.notMatch(jsonAnswers, /"title":"(Error|Placemark|PlacemarkWithExtendedData|User|Guild|Session|TimelineEvent)"/, 'no shared shape inlined in a JSON answer')
  t.notMatch(text, /Default Response/)
  t.ok((text.match(/#\/components\/schemas\/Error/g) ?? []).length >= 40, 'error answers refer to the Error schema')

  // Both forms of a path answer, and answer the same.
  for (const path of ['/api/v1/placemarks', '/api/v1/timeline', '/api/v1/stats']) {
    const plain = await app.inject(path)
    const slash = await app.inject(`${path}/`)
    t.equal(plain.statusCode, 200, path)
    t.equal(slash.statusCode, 200, `${path}/`)
    t.equal(slash.body, plain.body, `${path}/ answers as ${path}`)
  }

  // Error examples are this route's own: the one of /api/auth/me is not about a limit.
  const me = doc.paths['/api/auth/me'].get.responses
  t.same(Object.keys(me['401'].content['application/json'].examples), ['Missing authorization header', 'Invalid token', 'Token expired'])
  t.notMatch(JSON.stringify(me), /limit must be/)
  t.same(Object.keys(doc.paths['/api/v1/placemarks/{id}'].get.responses['404'].content['application/json'].examples), ['Placemark 999999 not found'])

  // Documented headers.
  const list = doc.paths['/api/v1/placemarks'].get.responses
  t.ok(list['200'].headers.etag, 'ETag on a cached answer')
  t.equal(list['304'].content, undefined, '304 has no body')
  t.same(Object.keys(list['429'].headers).sort(), ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
  t.notOk(doc.paths['/api/v1/spatial/bbox'].get.responses['304'], 'the box query is not cached: no 304')
  t.notOk(doc.paths['/api/v1/spatial/bbox'].get.responses['200'].headers?.etag)
  for (const path of ['/api/auth/identity', '/api/auth/refresh']) {
    const op = doc.paths[path].get ?? doc.paths[path].post
    t.match(op.responses['200'].headers['set-cookie'].description, /refresh_token/, `${path} documents the refresh cookie`)
  }

  // Parameters with defaults are optional; every bbox bound is described.
  const required = (path: string) => Object.fromEntries(doc.paths[path].get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]))
  t.match(required('/api/v1/placemarks'), { limit: false, offset: false, folder: false })
  t.match(required('/api/v1/spatial/bbox'), { min_lon: true, min_lat: true, max_lon: true, max_lat: true, limit: false })
  for (const p of doc.paths['/api/v1/spatial/bbox'].get.parameters) t.ok(p.description, `bbox ${p.name} is described`)
})

t.test('a route without a description, an operationId or a documented error fails the check', async (t) => {
  const handle = await openTestDatabase(t)
  const collector = routeCollector()
  const app = await buildApp({ config: testConfig(), db: handle, logger: false, onRoute: collector.onRoute })
  // Registered beside the app, as a careless new route would be.
  await app.register(async (extra: FastifyInstance) => {
    extra.get('/extra/bare', async () => ({ ok: true }))
    extra.get('/extra/partial/', {
      schema: { tags: ['Placemarks'], summary: 'Half documented', response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } } } } }
    }, async () => ({ ok: true }))
  })
  await app.ready()
  t.teardown(() => app.close())
  const problems = conventionProblems(app.swagger() as unknown as OpenApiDocument, collector.routes)
  for (const expected of [
    'GET /extra/bare: no operationId', 'GET /extra/bare: no description', 'GET /extra/bare: no documented error response',
    'GET /extra/bare: response 200 is not described in words',
    'GET /extra/partial/: no operationId', 'GET /extra/partial/: no description', 'GET /extra/partial/: no documented error response',
    'GET /extra/partial/: response 200 is not described in words', 'GET /extra/partial/: the path ends with a slash'
  ]) {
    t.ok(problems.includes(expected), expected)
  }
  t.same(problems.filter((p) => !p.startsWith('GET /extra/')), [], 'only the bad routes are reported')
})

t.test('the docs page is titled after the API and links the development sign-in when it is on', async (t) => {
  const page = async (config: ReturnType<typeof testConfig>) => {
    const handle = await openTestDatabase(t)
    const app = await buildApp({ config, db: handle, logger: false })
    await app.ready()
    t.teardown(() => app.close())
    const html = (await app.inject('/api/docs')).body
    const doc = (await app.inject('/api/docs/json')).json()
    return { html, intro: doc.info.description as string, title: doc.info.title as string }
  }
  const dev = await page(testConfig())
  t.equal(dev.title, 'Guild analytics and placemark API')
  t.match(dev.html, '<title>Guild analytics and placemark API</title>')
  t.notMatch(dev.html, /<title>Swagger UI/)
  t.match(dev.intro, '[/auth/token](/auth/token)', 'the development sign-in is linked')

  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const real = await page(testConfig({}, idp.env()))
  t.notMatch(real.intro, /auth\/token/, 'no development sign-in with a real identity provider')
})

// The request "Try it out" makes with every parameter example filled in.
function fromExamples (path: string, parameters: { name: string; in: string; example?: unknown }[] = []): { url: string; query: URLSearchParams } {
  let url = path
  const query = new URLSearchParams()
  for (const p of parameters) {
    if (p.example === undefined) continue
    if (p.in === 'path') url = url.replace(`{${p.name}}`, String(p.example))
    else query.set(p.name, String(p.example))
  }
  return { url, query }
}

t.test('the parameter examples work on the sample data', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildApp({ config: testConfig({}), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { security?: object[]; parameters?: { name: string; in: string; example?: unknown }[] }>> }
  const answers: Record<string, { statusCode: number; json(): any }> = {}
  for (const [path, ops] of Object.entries(doc.paths)) {
    const op = ops.get
    // The sample is a KML: it holds no images (test/import/icons.test.ts serves the example KMZ's).
    if (!op || op.security || !path.startsWith('/api/v1/') || path.startsWith('/api/v1/icons/')) continue
    const { url, query } = fromExamples(path, op.parameters)
    const res = await app.inject(query.size ? `${url}?${query}` : url)
    t.equal(res.statusCode, 200, `${url}?${query}`)
    answers[path] = res
  }
  t.ok(answers['/api/v1/spatial/bbox'].json().count > 0, 'the bbox example finds sample placemarks')
  t.ok(answers['/api/v1/placemarks'].json().placemarks.length > 0, 'the folder example finds sample placemarks')
  t.ok(answers['/api/v1/placemarks/{id}'].json().extended_data.length > 0, 'the id example has extended data')
})

t.test('the analytics routes\' parameter examples answer something on the sample data', async (t) => {
  // The sample data's demo activity ends at its first start (here: now); a guild owner uses "Try it out"
  // with every example filled in, as the docs page does.
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, {}, idp.env())
  idp.guilds = [{ id: DEMO_GUILD_ID, name: 'Demo', icon: null, owner: true, permissions: '0' }]
  const token = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
  const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { tags?: string[]; parameters?: { name: string; in: string; example?: unknown }[]; responses: Record<string, { content?: object }> }>> }
  const answers: Record<string, any> = {}
  for (const [path, ops] of Object.entries(doc.paths)) {
    const op = ops.get
    // The event stream does not end by itself (test/analytics/event-stream.test.ts reads it).
    if (!op?.tags?.includes('Analytics') || 'text/event-stream' in (op.responses['200']?.content ?? {})) continue
    const { url, query } = fromExamples(path, op.parameters)
    t.ok(query.has('since') || path === '/api/ghosts' || path === '/api/guilds', `${path}: a window example`)
    const res = await app.inject({ url: `${url}?${query}`, headers: { authorization: `Bearer ${token}` } })
    t.equal(res.statusCode, 200, `${url}?${query}`)
    answers[path] = res.json()
  }
  t.same(Object.keys(answers).sort(), ['/api/clients', '/api/ghosts', '/api/guilds', '/api/heatmap', '/api/lurkers', '/api/members/{userId}/activity', '/api/overview', '/api/roles', '/api/shifts', '/api/suspicion'])
  t.ok(answers['/api/guilds'].guilds.some((g: { events: number }) => g.events > 0), 'guilds')
  t.ok(answers['/api/overview'].days.some((d: { events: number }) => d.events > 0), 'overview')
  t.ok(answers['/api/ghosts'].ghosts.length > 0, 'ghosts')
  t.ok(answers['/api/lurkers'].lurkers.length > 0, 'lurkers')
  t.ok(answers['/api/heatmap'].cells.length > 0, 'heatmap')
  t.ok(answers['/api/roles'].members.length > 0, 'roles')
  t.ok(answers['/api/clients'].clients.some((c: { users: number }) => c.users > 0), 'clients')
  t.ok(answers['/api/shifts'].members.length > 0, 'shifts')
  t.ok(answers['/api/suspicion'].members.length > 0, 'suspicion')
  t.ok(answers['/api/members/{userId}/activity'].events.length > 0, 'a member\'s timeline')
})
