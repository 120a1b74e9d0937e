/**
 * One client must not hurt the others: what a single address can make the server log, hold, compute
 * or leak, each bounded and proven through the real server.
 */
import t from 'tap'
import type { EventEmitter } from 'node:events'
import { Readable, Writable } from 'node:stream'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { gunzipSync, gzipSync } from 'node:zlib'
import { importPlacemarks } from '../../db/placemark-import.ts'
import net from 'node:net'
import { buildApp, freePort, openTestDatabase, testConfig } from '../helper.ts'
import { loggerOptions } from '../../lib/logger.ts'

t.test('a 16 KB URL or a 12 KB Host header writes a bounded log line, and made-up paths are rate limited', async (t) => {
  const handle = await openTestDatabase(t)
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done() } })
  const app = await buildApp({ config: testConfig({ RATE_LIMIT_MAX: 3 }, { LOG_LEVEL: 'info' }), db: handle, logger: { ...(loggerOptions('info', 'json') as object), stream } })
  await app.ready()
  t.teardown(() => app.close())
  const long = `/scan/${'a'.repeat(16 * 1024)}`
  const first = await app.inject({ url: long, headers: { host: `h${'x'.repeat(12 * 1024)}.example` }, remoteAddress: '10.50.0.1' })
  t.equal(first.statusCode, 404)
  t.ok(first.json().message.length < 300, 'the 404 message names a clipped path')
  t.ok(lines.length >= 2, 'the request was logged')
  const longest = Math.max(...lines.map((l) => Buffer.byteLength(l)))
  t.ok(longest < 2048, `every log line stays under 2 KB (longest ${longest} B)`)
  t.ok(lines.some((l) => /…\(\d+ more\)/.test(l)), 'the cut is marked')

  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await app.inject({ url: `/scan-${i}`, remoteAddress: '10.50.0.2' })).statusCode)
  t.same(statuses, [404, 404, 404, 429], 'unmatched URLs draw on a rate limit too')
})

t.test('/metrics answers the operator\'s scraper only: private addresses, or the token', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig({ METRICS_TOKEN: 'scrape-token-0123456789' }), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  for (const address of ['127.0.0.1', '10.1.2.3', '192.168.7.8', '172.20.0.9', '::1', 'fd00::7', '::ffff:10.0.0.1']) {
    t.equal((await app.inject({ url: '/metrics', remoteAddress: address })).statusCode, 200, `${address}: answered`)
  }
  for (const address of ['203.0.113.7', '2001:db8::1', '172.32.0.1', '::ffff:8.8.8.8']) {
    const res = await app.inject({ url: '/metrics', remoteAddress: address })
    t.same([res.statusCode, res.json()], [404, { error: 'Not Found', message: 'Route GET /metrics not found' }], `${address}: as if there were none`)
  }
  t.equal((await app.inject({ url: '/metrics', remoteAddress: '203.0.113.7', headers: { authorization: 'Bearer scrape-token-0123456789' } })).statusCode, 200, 'a public address with the token')
  t.equal((await app.inject({ url: '/metrics', remoteAddress: '203.0.113.7', headers: { authorization: 'Bearer wrong-token-000000000' } })).statusCode, 404, 'a wrong token')
})

t.test('dataset answers: one entry per answer however the query is written, weak validators, gzip off the event loop', async (t) => {
  const handle = await openTestDatabase(t)
  // 1,000 placemarks with 12 KB descriptions: a page of them is a 12 MB answer.
  const description = 'x'.repeat(12_000)
  const kml = `<kml><Document>${Array.from({ length: 1000 }, (_, i) => `<Placemark><name>p${i}</name><description>${description}</description><Point><coordinates>${i / 100},1</coordinates></Point></Placemark>`).join('')}</Document></kml>`
  await importPlacemarks(handle, Readable.from([kml]), { timeZone: 'UTC', source: 'big.kml' })
  const app = await buildApp({ config: testConfig({ RATE_LIMIT_MAX: 10_000 }), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())

  const before = app.datasetCache.size
  for (const query of ['limit=10', 'limit=010', 'limit=1e1', 'offset=0&limit=10', 'limit=10&offset=0', 'limit=10&format=json']) {
    t.equal((await app.inject(`/api/v1/placemarks?${query}`)).statusCode, 200, query)
  }
  t.equal(app.datasetCache.size - before, 1, 'six spellings of one query: one cache entry')

  const plain = await app.inject('/api/v1/placemarks?limit=2')
  const zipped = await app.inject({ url: '/api/v1/placemarks?limit=2', headers: { 'accept-encoding': 'gzip' } })
  const etag = String(plain.headers.etag)
  t.not(zipped.headers.etag, etag, 'the gzip bytes have a tag of their own')
  const revalidate = (inm: string, gzip = false) => app.inject({ url: '/api/v1/placemarks?limit=2', headers: { 'if-none-match': inm, ...(gzip ? { 'accept-encoding': 'gzip' } : {}) } })
  t.equal((await revalidate(`W/${etag}`)).statusCode, 304, 'a weak tag matches (weak comparison)')
  t.equal((await revalidate(`"nope", W/${String(zipped.headers.etag)}`)).statusCode, 304, 'a list with the gzip tag, weakened by a proxy')
  t.equal((await revalidate(etag, true)).statusCode, 304, 'the plain tag revalidates the gzip answer of the same version')
  t.equal((await revalidate('"0-other"')).statusCode, 200, 'another tag does not')

  // The miss of the 12 MB page: hashed and compressed on the thread pool; what stays on the event loop
  // is the page's own serializing (linear in its bytes), reported here.
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const big = await app.inject({ url: '/api/v1/placemarks?limit=1000', headers: { 'accept-encoding': 'gzip' } })
  delay.disable()
  t.equal(big.statusCode, 200)
  t.equal(big.headers['content-encoding'], 'gzip')
  const started = performance.now()
  gzipSync(gunzipSync(big.rawPayload), { level: 6 })
  t.comment(`a 12 MB miss: longest event-loop stall ${(delay.max / 1e6).toFixed(0)} ms; compressing it on the loop would add ${(performance.now() - started).toFixed(0)} ms`)
})

// A real connection from a loopback address of its own (127.0.0.x): its first request, if any, answered.
function connectFrom (port: number, localAddress: string, request?: string): Promise<{ socket: net.Socket; answered: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress })
    let text = ''
    const answered = new Promise<string>((resolve) => {
      socket.on('data', (d) => { text += d; if (text.includes('\r\n\r\n')) resolve(text) })
      socket.on('close', () => resolve(text))
    })
    socket.on('error', () => {})
    socket.once('connect', () => {
      if (request) socket.write(request)
      resolve({ socket, answered })
    })
    socket.once('error', reject)
  })
}
const health = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'
const closedWithin = (socket: net.Socket, ms: number) => new Promise<boolean>((resolve) => {
  if (socket.destroyed) return resolve(true)
  const timer = setTimeout(() => resolve(false), ms)
  socket.once('close', () => { clearTimeout(timer); resolve(true) })
})

t.test('connection slots: one address cannot hold them all, unused slots come back, idle ones give way at the limit', async (t) => {
  const handle = await openTestDatabase(t)
  const port = await freePort()
  const app = await buildApp({ config: testConfig({ PORT: port, MAX_CONNECTIONS: 12, MAX_CONNECTIONS_PER_ADDRESS: 6, REQUEST_TIMEOUT_MS: 2000 }), db: handle, logger: false })
  await app.listen({ port, host: '127.0.0.1' })
  const sockets: net.Socket[] = []
  t.teardown(async () => {
    for (const s of sockets) s.destroy()
    await app.close()
  })

  // One address opens ten idle keep-alive connections (one request each, then silence): six are kept.
  const hog = await Promise.all(Array.from({ length: 10 }, () => connectFrom(port, '127.0.0.2', health)))
  sockets.push(...hog.map((c) => c.socket))
  const answers = await Promise.all(hog.map((c) => c.answered))
  t.equal(answers.filter((a) => a.startsWith('HTTP/1.1 200')).length, 6, 'six connections of one address served, the rest closed')
  const victim = await connectFrom(port, '127.0.0.3', health)
  sockets.push(victim.socket)
  t.match(await victim.answered, /^HTTP\/1\.1 200/, 'another address is served')

  // A connection that never sends a request is closed within the headers timeout (2 s here).
  const silent = await connectFrom(port, '127.0.0.4')
  sockets.push(silent.socket)
  t.ok(await closedWithin(silent.socket, 4000), 'a never-used connection gives its slot back within seconds')

  // Many addresses fill every slot with idle keep-alive connections: a new client still gets in.
  const fillers = await Promise.all(Array.from({ length: 12 }, (_, i) => connectFrom(port, `127.0.1.${i + 1}`, health)))
  sockets.push(...fillers.map((c) => c.socket))
  await Promise.all(fillers.map((c) => c.answered))
  let served = false
  for (let attempt = 0; attempt < 10 && !served; attempt++) {
    const late = await connectFrom(port, '127.0.0.5', health)
    sockets.push(late.socket)
    served = (await late.answered).startsWith('HTTP/1.1 200')
  }
  t.ok(served, 'at the limit, idle connections are closed so that a new client is served')
})

t.test('the health probes ping the database at most once a second; TRUST_PROXY=true is warned about', async (t) => {
  const handle = await openTestDatabase(t)
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const app = await buildApp({ config: testConfig({ CHANGE_POLL_MS: 600_000 }, { TRUST_PROXY: 'true', LOG_LEVEL: 'warn' }), db: handle, logger: { ...(loggerOptions('warn', 'json') as object), stream } })
  await app.ready()
  t.teardown(() => app.close())
  t.ok(lines.some((l) => /TRUST_PROXY=true trusts the client-supplied/.test(l)), 'a warning at start steers to a hop count')
  // The start's background work (the box index's load, the retention rule's deletes) is over first.
  await app.boxIndex.idle()
  await app.retention.idle()
  // Every database round trip checks a connection out of the pool: counted as they happen (the
  // server's own statistics reach pg_stat_database up to a second late, so they cannot tell).
  let checkouts = 0
  const pool = handle.pool as unknown as EventEmitter
  const count = () => { checkouts++ }
  pool.on('acquire', count)
  t.teardown(() => { pool.off('acquire', count) })
  const started = Date.now()
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => app.inject(i % 2 ? '/health' : '/health/ready')))
  for (let i = 0; i < 20; i++) await app.inject('/health')
  const seconds = Math.ceil((Date.now() - started) / 1000)
  t.ok(answers.every((a) => a.statusCode === 200), 'every probe answered')
  t.ok(checkouts >= 1 && checkouts <= seconds + 1, `60 probes in ${seconds} s or less cost ${checkouts} database round trips`)
})

t.test('the docs page\'s scripts go compressed; the API\'s answers are not compressed twice', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig(), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  const plain = await app.inject('/api/docs/static/swagger-ui-bundle.js')
  const zipped = await app.inject({ url: '/api/docs/static/swagger-ui-bundle.js', headers: { 'accept-encoding': 'br, gzip' } })
  t.equal(plain.statusCode, 200)
  t.notOk(plain.headers['content-encoding'], 'uncompressed to a client that does not ask')
  t.equal(zipped.headers['content-encoding'], 'br', 'Brotli to one that takes it')
  t.ok(zipped.rawPayload.length < plain.rawPayload.length / 3, `${plain.rawPayload.length} bytes become ${zipped.rawPayload.length}`)
  t.ok((await app.inject({ url: '/api/docs', headers: { 'accept-encoding': 'gzip' } })).statusCode === 200)
  const api = await app.inject({ url: '/api/v1/folders', headers: { 'accept-encoding': 'br' } })
  t.notOk(api.headers['content-encoding'], 'an API answer is untouched by the docs\' compression')
})
