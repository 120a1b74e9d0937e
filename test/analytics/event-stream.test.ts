import t, { type Test } from 'tap'
import http from 'node:http'
import { connect } from 'node:net'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { buildApp, buildTestApp, createPostgresDatabase, openTestDatabase, testConfig } from '../helper.ts'
import { openDatabase, type DatabaseHandle } from '../../db/index.ts'
import { ingestionKey } from '../support/activity.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { runScript } from '../support/run.ts'
import { until } from '../support/shared-state.ts'
import { emitChange } from '../../db/changes.ts'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import activityStreams, { STREAM_LIMITS } from '../../plugins/app/activity-streams.ts'

// The stand-in provider's default guild list: MANAGE_GUILD in this guild.
const G = '900000000000000001'
const OTHER = '900000000000000002'

interface Received { event: string; data: { guildId?: string; events?: number; types?: Record<string, number>; lastEventAt?: string; reason?: string }; at: number }
interface Stream { status: number; contentType: string | undefined; events: Received[]; comments: string[]; body: string; closed: boolean; close(): void }

/** Opens a guild's event stream on its own connection and parses what arrives. */
function openStream (port: number, token: string, guildId = G): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/api/guilds/${guildId}/events`, headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
      const s: Stream = { status: res.statusCode!, contentType: res.headers['content-type'], events: [], comments: [], body: '', closed: false, close: () => req.destroy() }
      let pending = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        s.body += chunk
        pending += chunk
        for (let i = pending.indexOf('\n\n'); i >= 0; i = pending.indexOf('\n\n')) {
          const block = pending.slice(0, i)
          pending = pending.slice(i + 2)
          let event = ''
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) s.comments.push(line)
            else if (line.startsWith('event: ')) event = line.slice(7)
            else if (line.startsWith('data: ')) s.events.push({ event, data: JSON.parse(line.slice(6)), at: Date.now() })
          }
        }
      })
      res.on('close', () => { s.closed = true })
      res.on('error', () => {})
      resolve(s)
    })
    req.on('error', reject)
  })
}

const activityTotal = (s: Stream) => s.events.filter((e) => e.event === 'activity').reduce((n, e) => n + e.data.events!, 0)
const message = (createdAt: string, o: Record<string, unknown> = {}) => ({ type: 'message', guildId: G, channelId: 'c1', userId: 'u1', username: 'one', createdAt, ...o })
const recent = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000).toISOString()

interface Setup { idp: StandInIdp; url: string; handle: DatabaseHandle; key: string }
async function setup (t: Test): Promise<Setup> {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 5 })
  t.teardown(() => handle.close())
  const key = await ingestionKey(handle, [G, OTHER])
  return { idp, url, handle, key }
}

async function listening (app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

async function signIn (app: FastifyInstance, idp: StandInIdp, id = '200000000000000001'): Promise<string> {
  idp.user = { id, username: `p${id}`, discriminator: '1', avatar: null }
  return (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
}

async function ingest (app: FastifyInstance, key: string, events: unknown[]): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/api/activity', headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: JSON.stringify({ events }) })
  return res.statusCode
}

t.test('activity streams across two instances sharing PostgreSQL', async (t) => {
  const { idp, url, handle, key } = await setup(t)
  // The change log's fallback read every minute: only the notification can explain a delivery within 2 s.
  const overrides = { CHANGE_POLL_MS: 60_000, STREAM_MAX_PER_USER: 2, RATE_LIMIT_MAX: 10_000 }
  const a = await buildTestApp(t, handle, overrides, idp.env())
  const b = await buildTestApp(t, handle, overrides, idp.env())
  const portA = await listening(a)
  const portB = await listening(b)
  const token = await signIn(a, idp)
  const noneOpen = (app: FastifyInstance) => until(async () => app.activityStreams.list().length === 0, 2000)

  t.test('an event ingested through A reaches a stream held on B within 2 s', async (t) => {
    const s = await openStream(portB, token)
    t.equal(s.status, 200)
    t.equal(s.contentType, 'text/event-stream; charset=utf-8')
    await until(async () => s.comments.includes(': open'), 2000)
    t.equal(await ingest(a, key, [message(recent(5), { guildId: OTHER })]), 200, 'another guild first: nothing for this stream')
    const first = recent(3)
    const latest = recent(2)
    const sent = Date.now()
    t.equal(await ingest(a, key, [message(first), message(latest, { type: 'typing' }), message(recent(4), { guildId: OTHER })]), 200)
    const took = await until(async () => s.events.length > 0, 2000)
    t.ok(took >= 0 && Date.now() - sent < 2000, `on B ${Date.now() - sent} ms after the commit on A`)
    t.same(s.events, [{ event: 'activity', data: { guildId: G, events: 2, types: { message: 1, typing: 1 }, lastEventAt: latest }, at: s.events[0]!.at }],
      'what was stored for this guild: counts per type and the latest createdAt')
    s.close()
    await noneOpen(b)
  })

  t.test('a change delivered twice counts once; a malformed one is ignored', async (t) => {
    const s = await openStream(portB, token)
    await until(async () => s.comments.includes(': open'), 2000)
    const change = JSON.stringify({ guildId: G, events: 4, types: { leave: 4 }, lastEventAt: Date.parse('2026-01-01T00:00:00Z'), load: 'replayed' })
    await emitChange(handle.db, { kind: 'activity', key: 'not a change' })
    await emitChange(handle.db, { kind: 'activity', key: change })
    await emitChange(handle.db, { kind: 'activity', key: change })
    await emitChange(handle.db, { kind: 'activity', key: change.replace('replayed', 'next') })
    await until(async () => s.events.length > 1, 3000)
    const data = { guildId: G, events: 4, types: { leave: 4 }, lastEventAt: '2026-01-01T00:00:00.000Z' }
    t.same(s.events.map((e) => e.data), [data, data], 'the repeated change was not added to the next message')
    s.close()
    await noneOpen(b)
  })

  t.test('the CLI\'s ingestion reaches a stream', async (t) => {
    const s = await openStream(portA, token)
    await until(async () => s.comments.includes(': open'), 2000)
    const dir = await mkdtemp(join(tmpdir(), 'stream-cli-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    const file = join(dir, 'events.ndjson')
    await writeFile(file, [message(recent(9)), message(recent(8), { type: 'join', channelId: undefined }), message(recent(7), { guildId: OTHER })].map((e) => JSON.stringify(e)).join('\n'))
    const run = await runScript('scripts/import-activity.ts', [file], { DATABASE_URL: url })
    t.equal(run.code, 0, run.stderr)
    t.ok(await until(async () => s.events.length > 0, 2000) >= 0, 'within 2 s of the command\'s commit')
    t.match(s.events[0], { event: 'activity', data: { guildId: G, events: 2, types: { message: 1, join: 1 } } })
    s.close()
    await noneOpen(a)
  })

  t.test('at most one message a second, later commits merged into the next, none lost', async (t) => {
    const s = await openStream(portB, token)
    await until(async () => s.comments.includes(': open'), 2000)
    for (let i = 0; i < 6; i++) t.equal(await ingest(a, key, [message(recent(1)), message(recent(1))]), 200)
    await until(async () => activityTotal(s) === 12, 4000)
    t.equal(activityTotal(s), 12, 'every event counted once')
    const gaps = s.events.slice(1).map((e, i) => e.at - s.events[i]!.at)
    t.ok(gaps.every((gap) => gap >= 900), `messages apart: ${gaps.join(', ')} ms`)
    t.ok(s.events.length < 6, `${s.events.length} messages for 6 commits`)
    s.close()
    await noneOpen(b)
  })

  t.test('STREAM_MAX_PER_USER streams per user; the next is 429', async (t) => {
    const one = await openStream(portB, token)
    const two = await openStream(portB, token)
    const three = await openStream(portB, token)
    t.same([one.status, two.status, three.status], [200, 200, 429])
    await until(async () => three.closed, 2000)
    t.same(JSON.parse(three.body), { error: 'Too Many Requests', message: 'At most 2 event streams may be open per user (STREAM_MAX_PER_USER)' })
    const elsewhere = await openStream(portA, token)
    t.equal(elsewhere.status, 200, 'counted per instance')
    const someoneElse = await openStream(portB, await signIn(a, idp, '200000000000000002'))
    t.equal(someoneElse.status, 200, 'and per user')
    one.close()
    await until(async () => b.activityStreams.list().length === 2, 2000)
    const again = await openStream(portB, token)
    t.equal(again.status, 200, 'a closed stream gives its place back')
    for (const s of [two, elsewhere, someoneElse, again]) s.close()
    await noneOpen(a)
    await noneOpen(b)
  })

  t.test('a session revoked through A ends its stream on B', async (t) => {
    const own = await signIn(a, idp)
    const s = await openStream(portB, own)
    const kept = await openStream(portB, token)
    await until(async () => s.comments.includes(': open') && kept.comments.includes(': open'), 2000)
    t.equal((await a.inject({ method: 'POST', url: '/api/auth/logout', headers: { authorization: `Bearer ${own}` } })).statusCode, 204)
    t.ok(await until(async () => s.closed, 2000) >= 0, 'ended')
    t.same(s.events.at(-1)?.data, { reason: 'session revoked' })
    t.equal(s.events.at(-1)?.event, 'end')
    t.notOk(kept.closed, 'another session\'s stream goes on')
    kept.close()
    await noneOpen(b)
  })

  t.test('a client that never reads: one merged update waits for it, and nothing is lost when it reads again', async (t) => {
    const socket = connect(portB, '127.0.0.1')
    await once(socket, 'connect')
    socket.write(`GET /api/guilds/${G}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    socket.pause()
    await until(async () => b.activityStreams.list().length === 1, 2000)
    const [open] = b.activityStreams.list()
    const started = Date.now()
    for (let i = 0; i < 20; i++) t.equal(await ingest(a, key, Array.from({ length: 50 }, () => message(recent(1)))), 200)
    await until(async () => open!.stream.pending?.events !== undefined, 2000)
    const seconds = (Date.now() - started) / 1000
    t.ok(open!.stream.sent <= Math.ceil(seconds) + 1, `${open!.stream.sent} messages written in ${seconds.toFixed(1)} s for 20 commits`)
    t.ok(open!.stream.pending!.events > 0, `one pending update of ${open!.stream.pending!.events} events`)
    t.ok(open!.stream.bufferedBytes <= STREAM_LIMITS.maxBufferedBytes, `${open!.stream.bufferedBytes} bytes waiting for the client`)
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { text += chunk })
    socket.resume()
    const total = () => [...text.matchAll(/"events":(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0)
    await until(async () => total() === 1000, 4000)
    t.equal(total(), 1000, 'the 1000 events, in few messages')
    socket.destroy()
    await noneOpen(b)
  })

  t.test('the guild rule and the bearer token', async (t) => {
    const s = await openStream(portB, token, '900000000000000999')
    await until(async () => s.closed, 2000)
    t.same([s.status, JSON.parse(s.body)], [403, { error: 'Forbidden', message: 'Insufficient permissions' }])
    const anonymous = await b.inject(`/api/guilds/${G}/events`)
    t.equal(anonymous.statusCode, 401)
  })
})

t.test('streams end when the access token expires and before the shutdown\'s drain', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  // Two seconds: a token's expiry is whole seconds after its issue's whole second, so a one-second token
  // issued late in a second lives a few milliseconds, and a loaded machine could not open the stream with it.
  const short = await buildTestApp(t, handle, { JWT_ACCESS_EXPIRES_IN: '2s' }, idp.env())
  const s = await openStream(await listening(short), await signIn(short, idp))
  t.equal(s.status, 200)
  t.ok(await until(async () => s.closed, 4000) >= 0, 'ended within the token\'s two seconds')
  t.same(s.events.at(-1), { event: 'end', data: { reason: 'token expired' }, at: s.events.at(-1)!.at })

  // Closed by the test: a long grace, which the streams must not wait for.
  const app = await buildApp({ config: testConfig({ SHUTDOWN_GRACE_MS: 20_000 }, idp.env()), db: handle, logger: false })
  const port = await listening(app)
  const streams = [await openStream(port, await signIn(app, idp)), await openStream(port, await signIn(app, idp))]
  await until(async () => streams.every((x) => x.comments.includes(': open')), 2000)
  const started = Date.now()
  await app.close()
  t.ok(Date.now() - started < 5000, `closed in ${Date.now() - started} ms`)
  for (const x of streams) t.same(x.events.map((e) => [e.event, e.data]), [['end', { reason: 'server stopping' }]], 'told why, then ended')
})

t.test('each stream holds one of its address\'s connection slots', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'postgres')
  const app = await buildTestApp(t, handle, { MAX_CONNECTIONS_PER_ADDRESS: 2 }, idp.env())
  const port = await listening(app)
  const token = await signIn(app, idp)
  const one = await openStream(port, token)
  const two = await openStream(port, token)
  t.same([one.status, two.status], [200, 200])
  await t.rejects(openStream(port, token), /socket hang up|ECONNRESET/, 'a third connection from the address is closed')
  one.close()
  await until(async () => app.activityStreams.list().length === 1, 2000)
  const three = await openStream(port, token)
  t.equal(three.status, 200, 'a slot given back')
  two.close()
  three.close()
})

t.test('PGlite: a stream gets the activity ingested through the API', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, 'pglite')
  const key = await ingestionKey(handle, [G])
  const app = await buildTestApp(t, handle, {}, idp.env())
  const s = await openStream(await listening(app), await signIn(app, idp))
  await until(async () => s.comments.includes(': open'), 2000)
  t.equal(await ingest(app, key, [message(recent(2)), message(recent(1), { type: 'presence', channelId: undefined, status: 'idle' })]), 200)
  await until(async () => s.events.length > 0, 2000)
  t.match(s.events[0], { event: 'activity', data: { guildId: G, events: 2, types: { message: 1, presence: 1 } } })
  s.close()
})

t.test('the streams end before the connections\' drain: the plugin refuses to come after it', async (t) => {
  const app = Fastify()
  for (const name of ['config', 'changes', 'auth', 'jwt', 'connections']) app.register(fp(async () => {}, { name }))
  app.register(activityStreams)
  await t.rejects(async () => { await app.ready() }, /activity-streams must be registered before connections/)
})
