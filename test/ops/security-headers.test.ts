import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { InjectOptions } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import helmet from 'helmet'
import { contentSecurityPolicy, helmetHeaders, helmetOptions, tileSource } from '../../plugins/external/security-headers.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('the map tiles\' origin in the policy', async (t) => {
  t.same(tileSource(undefined), [])
  t.same(tileSource('https://{s}.tile.openstreetmap.org/{z}/{x}/{y}.png'), ['https://*.tile.openstreetmap.org'])
  t.same(tileSource('https://tiles.example.com:8443/{z}/{x}/{y}.png?key=1'), ['https://tiles.example.com:8443'])
  t.same(tileSource('HTTP://Tiles.Example.com/{z}/{x}/{y}.png'), ['http://tiles.example.com'])
  t.same(tileSource('https://a.{s}.example.com/{z}/{x}/{y}.png'), ['https:'], 'a placeholder past the first label: the scheme')
  t.same(tileSource('/tiles/{z}/{x}/{y}.png'), [], 'same origin: \'self\' covers it')
  t.same(contentSecurityPolicy('https://{s}.tile.example.org/{z}/{x}/{y}.png').directives.imgSrc, ["'self'", 'data:', 'blob:', 'https://*.tile.example.org'])
})

t.test('security headers and the request id on every kind of answer', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 4, MAP_TILE_URL: 'https://{s}.tile.example.org/{z}/{x}/{y}.png' })
  const own = (n: number) => ({ remoteAddress: `10.30.0.${n}` })
  const hit = await app.inject({ url: '/api/v1/stats', ...own(1) })
  const cases: Record<string, InjectOptions & { status: number }> = {
    'a cached miss': { url: '/api/v1/placemarks?limit=5', ...own(2), status: 200 },
    'a cached hit': { url: '/api/v1/stats', ...own(3), status: 200 },
    'a cached hit, gzip': { url: '/api/v1/stats', headers: { 'accept-encoding': 'gzip' }, ...own(4), status: 200 },
    'a 304 of a cached answer': { url: '/api/v1/stats', headers: { 'if-none-match': String(hit.headers.etag) }, ...own(5), status: 304 },
    'a HEAD of a cached answer': { method: 'HEAD', url: '/api/v1/stats', ...own(6), status: 200 },
    'an uncached answer': { url: '/health', ...own(7), status: 200 },
    'the readiness check': { url: '/health/ready', ...own(8), status: 200 },
    'a refused query': { url: '/api/v1/placemarks?limit=0', ...own(9), status: 400 },
    'an unknown placemark': { url: '/api/v1/placemarks/999999', ...own(10), status: 404 },
    'an unknown route': { url: '/nowhere', ...own(11), status: 404 },
    'a refused bearer token': { url: '/api/auth/me', headers: { authorization: 'Bearer nope' }, ...own(12), status: 401 },
    'the docs page': { url: '/api/docs', ...own(13), status: 200 },
    'the docs\' script': { url: '/api/docs/static/swagger-initializer.js', ...own(14), status: 200 },
    'a refused sign-in callback': { url: '/auth/callback?code=x', ...own(15), status: 401 },
    'the token page': { url: '/auth/token', ...own(16), status: 200 },
    'the pages\' session module': { url: '/shared/session.js', ...own(20), status: 200 },
    'the dashboard page': { url: '/dashboard', ...own(21), status: 200 },
    'the dashboard\'s script': { url: '/dashboard/dashboard.js', ...own(22), status: 200 },
    'the dashboard\'s Chart.js': { url: '/dashboard/vendor/chart.umd.min.js', ...own(23), status: 200 },
    'the development provider\'s page': { url: '/dev/idp/authorize?client_id=x&redirect_uri=y&response_type=code', ...own(17), status: 400 },
    'the metrics': { url: '/metrics', ...own(18), status: 200 }
  }
  for (let i = 0; i < 4; i++) await app.inject({ url: '/api/v1/folders', ...own(19) })
  cases['a rate-limit refusal'] = { url: '/api/v1/folders', ...own(19), status: 429 }

  for (const [label, { status, ...request }] of Object.entries(cases)) {
    const res = await app.inject(request)
    t.equal(res.statusCode, status, `${label}: ${status}`)
    const h = res.headers
    const csp = String(h['content-security-policy'])
    t.ok(csp.startsWith("default-src 'self';") && csp.includes(";script-src 'self';") && csp.includes(";img-src 'self' data: blob: https://*.tile.example.org;"), `${label}: the CSP`)
    t.notMatch(h['content-security-policy'], /unsafe-eval|script-src[^;]*unsafe-inline/, `${label}: no inline or eval'd scripts`)
    t.equal(h['x-content-type-options'], 'nosniff', `${label}: nosniff`)
    t.equal(h['x-frame-options'], 'SAMEORIGIN', `${label}: framing`)
    t.match(h['strict-transport-security'], /max-age=\d+/, `${label}: HSTS`)
    t.equal(h['referrer-policy'], 'no-referrer', `${label}: referrer policy`)
    t.equal(h['cross-origin-opener-policy'], 'same-origin', `${label}: COOP`)
    t.match(h['x-request-id'], UUID, `${label}: a generated request id`)
  }
})

t.test('the dashboard page allows no inline style either; only its own files are served', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { MAP_TILE_URL: 'https://{s}.tile.example.org/{z}/{x}/{y}.png' })
  const page = await app.inject('/dashboard')
  const csp = String(page.headers['content-security-policy'])
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, csp)
  t.match(csp, /(^|;)style-src 'self'(;|$)/)
  t.same(csp.split(';').filter((d) => !d.startsWith('style-src')), String((await app.inject('/health')).headers['content-security-policy']).split(';').filter((d) => !d.startsWith('style-src')), 'otherwise the site\'s policy')
  for (const url of ['/dashboard/vendor/chart.js', '/dashboard/vendor/../package.json', '/dashboard/nowhere.js']) t.equal((await app.inject(url)).statusCode, 404, `${url}: 404`)
  t.equal((await app.inject('/dashboard/vendor/chart.umd.min.js')).headers['content-type'], 'application/javascript; charset=utf-8')
})

t.test('SECURITY_HEADERS=false leaves the headers out, the request id stays', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { SECURITY_HEADERS: false })
  const res = await app.inject('/api/v1/folders')
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['content-security-policy'])
  t.notOk(res.headers['x-content-type-options'])
  t.match(res.headers['x-request-id'], UUID)
})

t.test('an incoming x-request-id is kept when it is safe, replaced otherwise (real HTTP)', async (t) => {
  const handle = await openTestDatabase(t)
  // The 404 and the 400 below, the miss and the hit use up the budget of 4 (unmatched URLs are limited too); the fifth is refused.
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 4 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const get = (path: string, id?: string | string[]) => new Promise<{ status: number; id: string | undefined; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false })
    if (id !== undefined) req.setHeader('x-request-id', id)
    req.on('response', (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode!, id: res.headers['x-request-id'] as string | undefined, body }))
    }).on('error', reject).end()
  })

  const kept = ['a1b2c3', 'trace-0af7651916cd43dd8448eb211c80319c', 'lb:1234.5/6+7=@8_9', 'x'.repeat(128)]
  for (const id of kept) t.equal((await get('/health', id)).id, id, `kept: ${id.slice(0, 40)}`)
  const replaced = ['x'.repeat(129), '<script>alert(1)</script>', 'has space', 'semi;colon', 'quote"d', 'é-accent', '']
  for (const id of replaced) {
    const res = await get('/health', id)
    t.match(res.id, UUID, `replaced: ${JSON.stringify(id.slice(0, 40))}`)
  }
  t.match((await get('/health', ['one', 'two'])).id, UUID, 'two x-request-id headers: replaced')
  t.match((await get('/health')).id, UUID, 'none: generated')
  t.not((await get('/health')).id, (await get('/health')).id, 'a new id per request')

  const notFound = await get('/nowhere', 'id-404')
  t.same([notFound.status, notFound.id], [404, 'id-404'], 'on a 404')
  const invalid = await get('/api/v1/placemarks?limit=0', 'id-400')
  t.same([invalid.status, invalid.id], [400, 'id-400'], 'on a validation error')
  const miss = await get('/api/v1/folders', 'id-miss')
  const hitRes = await get('/api/v1/folders', 'id-hit')
  const limited = await get('/api/v1/folders', 'id-429')
  t.same([miss.status, miss.id, hitRes.status, hitRes.id, limited.status, limited.id], [200, 'id-miss', 200, 'id-hit', 429, 'id-429'], 'on a cached miss, a hit and a 429')
})

t.test('the headers are the ones helmet\'s own middleware sets for the same options (real HTTP)', async (t) => {
  for (const tiles of [undefined, 'https://{s}.tile.example.org/{z}/{x}/{y}.png']) {
    // helmet as any Node server would run it, per request.
    const server = http.createServer((req, res) => helmet(helmetOptions(tiles))(req, res, () => res.end('ok')))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const reference = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
    server.close()
    const expected: Record<string, string> = {}
    for (const [name, value] of reference.headers) if (!['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(name)) expected[name] = value
    t.ok(Object.keys(expected).length >= 9, 'helmet set its headers')
    t.same(helmetHeaders(helmetOptions(tiles)), expected, `the set computed once, tiles ${tiles ?? 'none'}`)

    const handle = await openTestDatabase(t)
    const app = await buildTestApp(t, handle, tiles ? { MAP_TILE_URL: tiles } : {})
    for (const url of ['/api/v1/folders', '/nowhere', '/api/docs']) {
      const res = await app.inject(url)
      for (const [name, value] of Object.entries(expected)) t.equal(res.headers[name], value, `${url}: ${name}`)
    }
  }
})
