import t from 'tap'
import { buildTestApp, openTestDatabase } from '../helper.ts'

t.test('CORS', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle)
  const local = 'http://localhost:5173'

  t.test('without Origin: only Vary', async (t) => {
    const res = await app.inject('/health')
    t.equal(res.headers.vary, 'Origin')
    t.notOk(res.headers['access-control-allow-origin'])
  })

  t.test('an allowed origin gets the headers, another does not', async (t) => {
    const ok = await app.inject({ url: '/health', headers: { origin: local } })
    t.equal(ok.headers['access-control-allow-origin'], local)
    t.equal(ok.headers['access-control-allow-credentials'], 'true')
    t.match(ok.headers['access-control-expose-headers'], /x-ratelimit-remaining.*etag/)
    t.equal(ok.headers.vary, 'Origin')
    for (const origin of ['https://evil.example', 'http://localhost.evil.example', 'http://127.0.0.1.evil.example:80', 'null']) {
      const no = await app.inject({ url: '/health', headers: { origin } })
      t.notOk(no.headers['access-control-allow-origin'], origin)
      t.equal(no.headers.vary, 'Origin', origin)
    }
  })

  t.test('preflight', async (t) => {
    const res = await app.inject({ method: 'OPTIONS', url: '/api/auth/refresh', headers: { origin: local, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' } })
    t.equal(res.statusCode, 204)
    t.equal(res.headers['content-length'], '0')
    t.equal(res.body, '')
    t.equal(res.headers['access-control-allow-origin'], local)
    t.equal(res.headers['access-control-allow-methods'], 'GET, HEAD, POST, DELETE, OPTIONS')
    t.equal(res.headers['access-control-allow-headers'], 'content-type, authorization')
    t.equal(res.headers['access-control-max-age'], '600')
    t.equal(res.headers.vary, 'Origin, Access-Control-Request-Headers')
    const refused = await app.inject({ method: 'OPTIONS', url: '/api/v1/placemarks', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } })
    t.equal(refused.statusCode, 204)
    t.notOk(refused.headers['access-control-allow-origin'], 'a browser refuses the call without it')
    const bare = await app.inject({ method: 'OPTIONS', url: '/api/v1/anything' })
    t.equal(bare.statusCode, 204, 'OPTIONS without a preflight is answered too')
  })

  t.test('cached placemark answers vary by Origin and encoding, on a miss and on a hit', async (t) => {
    for (const label of ['miss', 'hit']) {
      const res = await app.inject({ url: '/api/v1/stats', headers: { origin: local } })
      t.equal(res.statusCode, 200, label)
      t.equal(res.headers.vary, 'Origin, accept-encoding', label)
      t.equal(res.headers['access-control-allow-origin'], local, label)
      t.ok(res.headers.etag, label)
    }
  })

  t.test('CORS_ORIGINS replaces the default list', async (t) => {
    const custom = await buildTestApp(t, handle, { CORS_ORIGINS: 'https://maps.example.org, https://admin.example.org' })
    const ok = await custom.inject({ url: '/health', headers: { origin: 'https://admin.example.org' } })
    t.equal(ok.headers['access-control-allow-origin'], 'https://admin.example.org')
    const local = await custom.inject({ url: '/health', headers: { origin: 'http://localhost:5173' } })
    t.notOk(local.headers['access-control-allow-origin'])
  })
})
