import t from 'tap'
import net from 'node:net'
import { STATUS_CODES } from 'node:http'
import type { InjectOptions } from 'fastify'
import { buildApp, buildTestApp, freePort, openTestDatabase, testConfig } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'

// A request that succeeds for each operation of the OpenAPI document with numeric or string parameters;
// the test swaps one parameter at a time for a hostile value. A new operation must be added here.
// `stream`: the valid request opens a never-ending event stream (test/analytics/event-stream.test.ts reads it);
// only its hostile variants, refused before the stream starts, are sent here.
const valid: Record<string, { path: string; query: Record<string, string>; status?: number; stream?: boolean }> = {
  'GET /api/v1/placemarks': { path: '/api/v1/placemarks', query: { limit: '5', offset: '0', folder: 'Airports' } },
  'GET /api/v1/placemarks/{id}': { path: '/api/v1/placemarks/1', query: {} },
  'GET /ogc': { path: '/ogc', query: { f: 'json' } },
  'GET /ogc/conformance': { path: '/ogc/conformance', query: { f: 'json' } },
  'GET /ogc/collections': { path: '/ogc/collections', query: { f: 'json' } },
  'GET /ogc/collections/placemarks': { path: '/ogc/collections/placemarks', query: { f: 'json' } },
  'GET /ogc/collections/placemarks/queryables': { path: '/ogc/collections/placemarks/queryables', query: { f: 'json' } },
  'GET /ogc/collections/placemarks/schema': { path: '/ogc/collections/placemarks/schema', query: { f: 'json' } },
  'GET /ogc/collections/placemarks/items': { path: '/ogc/collections/placemarks/items', query: { limit: '5', offset: '0', bbox: '-180,-90,180,90', datetime: '2000-01-01/..', folder: 'Airports', geometry_type: 'Point', q: 'air' } },
  'GET /ogc/collections/placemarks/items/{featureId}': { path: '/ogc/collections/placemarks/items/1', query: {} },
  'GET /api/v1/spatial/bbox': { path: '/api/v1/spatial/bbox', query: { min_lon: '-116', min_lat: '35', max_lon: '-114', max_lat: '37', limit: '10' } },
  'GET /api/v1/timeline': { path: '/api/v1/timeline', query: { format: 'geojson' } },
  'GET /api/v1/timeline/events': { path: '/api/v1/timeline/events', query: { format: 'json' } },
  'GET /api/v1/export.kml': { path: '/api/v1/export.kml', query: { folder: 'Airports', bbox: '-116,35,-114,37' } },
  'GET /api/v1/export.kmz': { path: '/api/v1/export.kmz', query: { folder: 'Airports', bbox: '-116,35,-114,37' } },
  'GET /api/v1/tiles/{z}/{x}/{y}.mvt': { path: '/api/v1/tiles/14/2950/6428.mvt', query: {} },
  'GET /api/v1/tiles.json': { path: '/api/v1/tiles.json', query: { folder: 'Airports', q: 'air', datetime: '2000-01-01/..' } },
  'GET /api/v1/time-histogram': { path: '/api/v1/time-histogram', query: { start: '2017-10-01T00:00:00Z', step: '3600000', bins: '24', folder: 'Airports', q: 'air' } },
  // The sample is a KML: it holds no images, so the valid request is a 404 (test/import/icons.test.ts serves some).
  'GET /api/v1/icons/{*}': { path: '/api/v1/icons/images/icon-1.png', query: {}, status: 404 },
  'GET /api/ghosts': { path: '/api/ghosts', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', limit: '5' } },
  'GET /api/lurkers': { path: '/api/lurkers', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', minPresence: '2' } },
  'GET /api/heatmap': { path: '/api/heatmap', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', timeZone: 'Europe/Paris' } },
  'GET /api/roles': { path: '/api/roles', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5' } },
  'GET /api/clients': { path: '/api/clients', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5' } },
  'GET /api/shifts': { path: '/api/shifts', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', minEvents: '3' } },
  'GET /api/suspicion': { path: '/api/suspicion', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', minScore: '10' } },
  'GET /api/members/{userId}/activity': { path: '/api/members/100000000000000001/activity', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', types: 'message' } },
  'GET /api/overview': { path: '/api/overview', query: { guildId: '700000000000000001', since: '2025-12-01T00:00:00Z', until: '2026-01-01T00:00:00Z', limit: '5', timeZone: 'Europe/Paris' } },
  'GET /api/guilds': { path: '/api/guilds', query: { limit: '5' } },
  'GET /api/guilds/{guildId}/events': { path: '/api/guilds/700000000000000001/events', query: {}, stream: true },
  'GET /api/auth/identity/login': { path: '/api/auth/identity/login', query: { return: '/dashboard' }, status: 302 },
  'GET /api/auth/identity': { path: '/api/auth/identity', query: { code: 'ok', state: 'anything' } },
  'DELETE /api/auth/sessions/{id}': { path: '/api/auth/sessions/none', query: {}, status: 404 },
  'DELETE /api/auth/sessions': { path: '/api/auth/sessions', query: { scope: 'others' }, status: 204 },
  'GET /api/auth/history': { path: '/api/auth/history', query: { limit: '5' } },
  'GET /api/admin/users': { path: '/api/admin/users', query: { q: 'adm', limit: '5', offset: '0' } },
  'GET /api/admin/users/{id}': { path: '/api/admin/users/none', query: {}, status: 404 },
  // Without its body: 400 for the body; a hostile path parameter is judged first.
  'PATCH /api/admin/users/{id}': { path: '/api/admin/users/none', query: {}, status: 400 },
  'DELETE /api/admin/users/{id}/sessions': { path: '/api/admin/users/none/sessions', query: {}, status: 404 },
  'GET /api/admin/audit': { path: '/api/admin/audit', query: { type: 'signin', since: '2025-01-01T00:00:00Z', limit: '5' } }
}

// The valid request's path with one path parameter swapped (the others keep their valid values).
const withPathParameter = (template: string, valid: string, name: string, label: string) => {
  const validSegments = valid.split('/')
  return template.split('/').map((segment, k) => segment.includes(`{${name}}`) ? segment.replace(`{${name}}`, encodeURIComponent(label)) : validSegments[k]).join('/')
}

const url = (path: string, query: Record<string, string>) => {
  const qs = new URLSearchParams(query).toString()
  return qs ? `${path}?${qs}` : path
}

t.test('hostile parameter values answer 400 on every route, never 500', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, {}, idp.env())
  idp.user = { id: '6', username: 'admin', discriminator: '1', avatar: null }
  idp.guilds = []
  t.equal((await app.inject('/api/auth/identity?code=ok')).statusCode, 200)
  await handle.db.updateTable('users').set({ role: 'ADMIN' }).where('provider_id', '=', '6').execute()
  const token = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
  const headers = { authorization: `Bearer ${token}` }

  const doc = app.swagger() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: { type?: string } }[] }>> }
  const numeric: string[] = []
  const strings: string[] = []
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query' && p.in !== 'path') continue
        const key = `${method.toUpperCase()} ${path.replace(/\/$/, '')}`
        const type = p.schema?.type
        if (type === 'integer' || type === 'number') numeric.push(`${key} ${p.in} ${p.name}`)
        else if (type === 'string') strings.push(`${key} ${p.in} ${p.name}`)
      }
    }
  }
  t.ok(numeric.length >= 9, `${numeric.length} numeric parameters in the document`)

  for (const key of Object.keys(valid)) {
    const { path, query, status = 200, stream } = valid[key]
    if (stream) continue
    t.equal((await app.inject({ method: key.split(' ')[0] as 'GET', url: url(path, query), headers })).statusCode, status, `${key} answers its valid request`)
  }

  const check = async (label: string, target: string, expected: RegExp) => {
    const [method, path, where, name] = target.split(' ')
    const base = valid[`${method} ${path}`]
    t.ok(base, `${method} ${path} has a valid request in this test`)
    if (!base) return
    const res = await app.inject({
      method: method as 'GET',
      url: where === 'path' ? url(withPathParameter(path, base.path, name, label), base.query) : url(base.path, { ...base.query, [name]: label }),
      headers
    })
    t.equal(res.statusCode, 400, `${target} = ${JSON.stringify(label)}: 400`)
    t.match(res.json(), { error: 'Bad Request', message: expected }, `${target} = ${JSON.stringify(label)}: names the parameter`)
    t.same(Object.keys(res.json()).sort(), ['error', 'message'])
  }
  for (const target of numeric) {
    const name = target.split(' ')[3]
    for (const value of ['Infinity', '-Infinity', '1e309', '-1e309', 'NaN']) {
      await check(value, target, new RegExp(`/${name} must be`))
    }
  }
  for (const target of strings) {
    const name = target.split(' ')[3]
    await check('a\u0000b', target, new RegExp(`/${name} must`))
  }

  // A `since` on the last day PostgreSQL dates can hold here, whose next day is out of range.
  const late = await app.inject({ url: '/api/ghosts?guildId=700000000000000001&since=9999-12-31T12:00:00Z', headers })
  t.equal(late.statusCode, 200, 'a since on 9999-12-31 answers')
  t.same(late.json().ghosts, [])
  const beyond = await app.inject({ url: '/api/ghosts?guildId=700000000000000001&since=10000-01-01T00:00:00Z', headers })
  t.equal(beyond.statusCode, 400)
  // The cap of the box query holds: a limit past it is refused, not served.
  t.equal((await app.inject('/api/v1/spatial/bbox?min_lon=-180&min_lat=-90&max_lon=180&max_lat=90&limit=10001')).statusCode, 400)
  // A NUL in a JSON body.
  const body = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: 'a\u0000b' } })
  t.equal(body.statusCode, 400)
  t.match(body.json().message, /body\/refreshToken must not contain a NUL/)
})

t.test('errors raised by the framework keep {error, message} and the CORS headers', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, {})
  const origin = 'http://localhost:5173'
  const cases: { name: string; req: InjectOptions; status: number }[] = [
    { name: 'a path parameter past the router limit', req: { url: `/api/v1/placemarks/${'1'.repeat(200)}` }, status: 414 },
    { name: 'a malformed escape in the path', req: { url: '/api/v1/placemarks/%E0%A4%A' }, status: 400 },
    { name: 'invalid JSON', req: { method: 'POST', url: '/api/auth/refresh', headers: { 'content-type': 'application/json' }, payload: '{bad' }, status: 400 },
    { name: 'an unsupported body type', req: { method: 'POST', url: '/api/auth/refresh', headers: { 'content-type': 'text/xml' }, payload: '<a/>' }, status: 415 },
    { name: 'a body past the limit', req: { method: 'POST', url: '/api/auth/refresh', headers: { 'content-type': 'application/json' }, payload: `{"a":"${'x'.repeat(1_100_000)}"}` }, status: 413 },
    { name: 'an unknown method', req: { method: 'DELETE', url: '/api/v1/stats' }, status: 404 }
  ]
  for (const c of cases) {
    const res = await app.inject({ ...c.req, headers: { ...(c.req.headers as Record<string, string> | undefined), origin } })
    t.equal(res.statusCode, c.status, `${c.name}: ${c.status}`)
    const json = res.json()
    t.same(Object.keys(json).sort(), ['error', 'message'], `${c.name}: only error and message`)
    t.equal(json.error, STATUS_CODES[c.status], `${c.name}: the reason phrase`)
    t.equal(res.headers['access-control-allow-origin'], origin, `${c.name}: CORS`)
    t.match(res.headers.vary, /Origin/, `${c.name}: Vary`)
  }
})

// Raw HTTP on a real socket: what reaches the server before Fastify has a request.
async function rawExchange (port: number, write: (socket: net.Socket) => void, ms = 10_000): Promise<{ text: string; elapsed: number }> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let text = ''
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('no answer')) }, ms)
    socket.on('data', (d) => { text += d.toString() })
    socket.on('error', () => {})
    socket.on('close', () => { clearTimeout(timer); resolve({ text, elapsed: Date.now() - started }) })
    socket.on('connect', () => write(socket))
  })
}

t.test('HTTP parser errors and slow requests answer {error, message} and close', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const port = await freePort()
  const app = await buildApp({ config: testConfig({ PORT: port, REQUEST_TIMEOUT_MS: 1500 }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  t.teardown(() => app.close())

  const bad = await rawExchange(port, (s) => s.write('GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'))
  t.match(bad.text, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(bad.text, /\{"error":"Bad Request","message":"The request is not valid HTTP"\}$/)

  const big = await rawExchange(port, (s) => s.write(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`))
  t.match(big.text, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
  t.match(big.text, /"error":"Request Header Fields Too Large"/)

  // A body trickled one byte every 200 ms never completes: cut off after REQUEST_TIMEOUT_MS.
  let trickle: NodeJS.Timeout | undefined
  const slow = await rawExchange(port, (s) => {
    s.write('POST /api/auth/refresh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{')
    trickle = setInterval(() => { if (!s.destroyed) s.write(' ') }, 200)
  })
  clearInterval(trickle)
  t.match(slow.text, /^HTTP\/1\.1 408 Request Timeout\r\n/, 'a trickled body is cut off with 408')
  t.match(slow.text, /"message":"The request was not received in time"/)
  t.ok(slow.elapsed < 4500, `within the timeout and one check interval (${slow.elapsed} ms)`)

  const ok = await rawExchange(port, (s) => s.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
  t.match(ok.text, /^HTTP\/1\.1 200 OK/, 'the server answers normally afterwards')
})

t.test('connections past MAX_CONNECTIONS are closed, and slow ones do not hold up closing', async (t) => {
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const app = await buildApp({ config: testConfig({ PORT: port, MAX_CONNECTIONS: 20, REQUEST_TIMEOUT_MS: 60_000, SHUTDOWN_GRACE_MS: 1000 }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  const sockets: net.Socket[] = []
  t.teardown(() => { for (const s of sockets) s.destroy() })
  const closed: boolean[] = []
  for (let i = 0; i < 40; i++) {
    const s = net.connect(port, '127.0.0.1')
    const index = i
    closed[index] = false
    s.on('error', () => {})
    s.on('close', () => { closed[index] = true })
    s.on('connect', () => s.write('POST /api/auth/refresh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{'))
    sockets.push(s)
  }
  await new Promise((resolve) => setTimeout(resolve, 500))
  const open = closed.filter((c) => !c).length
  t.equal(open, 20, `${open} of 40 slow connections held open`)
  const started = Date.now()
  await app.close()
  t.ok(Date.now() - started < 5000, `closing does not wait for slow requests (${Date.now() - started} ms)`)
})
