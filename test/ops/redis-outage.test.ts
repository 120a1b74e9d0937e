import t from 'tap'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { TcpProxy } from '../support/tcp-proxy.ts'

t.test('a Redis that silently stops answering is skipped within seconds, not waited on by every request', async (t) => {
  const proxy = new TcpProxy(6379)
  await proxy.start()
  t.teardown(() => proxy.stop())
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 1000, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_COMMAND_TIMEOUT_MS: 500 })
  // A client address of this run only: the budget in the shared Redis starts full.
  const remoteAddress = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
  const timed = async () => {
    const started = Date.now()
    const res = await app.inject({ url: '/api/v1/folders', remoteAddress })
    return { status: res.statusCode, ms: Date.now() - started, remaining: res.headers['x-ratelimit-remaining'] }
  }
  // Redis answering: counted there.
  for (let i = 0; i < 100 && app.redis?.status !== 'ready'; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  const before = await timed()
  t.equal(before.status, 200)
  t.equal(before.remaining, '999', 'counted in Redis')

  proxy.blackhole()
  const first = await timed()
  t.equal(first.status, 200, 'served while Redis is silent (counted by this instance)')
  t.ok(first.ms < 1500, `the first request waits at most the command timeout (${first.ms} ms)`)
  await new Promise((resolve) => setTimeout(resolve, 2500))
  const later: number[] = []
  for (let i = 0; i < 20; i++) {
    const r = await timed()
    t.equal(r.status, 200)
    later.push(r.ms)
  }
  const worst = Math.max(...later)
  t.ok(worst < 100, `once noticed, requests do not wait on Redis (worst of 20: ${worst} ms)`)

  proxy.restore()
  let counted = false
  for (let i = 0; i < 50 && !counted; i++) {
    const r = await timed()
    counted = r.remaining !== undefined && Number(r.remaining) < 999
    if (!counted) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.ok(counted, 'counting in Redis resumes when it answers again')
})

t.test('while Redis is away the limits hold per instance: the global and the sign-in limits still refuse', async (t) => {
  const proxy = new TcpProxy(6379)
  await proxy.start()
  t.teardown(() => proxy.stop())
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 3, AUTH_RATE_LIMIT_MAX: 2, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_COMMAND_TIMEOUT_MS: 300 })
  for (let i = 0; i < 100 && app.redis?.status !== 'ready'; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  proxy.blackhole()
  // Once the watchdog has dropped the silent connection, commands fail at once and the counting is local.
  for (let i = 0; i < 100 && app.redis?.status === 'ready'; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.not(app.redis?.status, 'ready', 'Redis is noticed as away')
  const remoteAddress = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await app.inject({ url: '/api/v1/folders', remoteAddress })).statusCode)
  t.same(statuses, [200, 200, 200, 429], 'the global limit refuses the fourth request, counted by this instance')
  const auth = []
  for (let i = 0; i < 3; i++) auth.push((await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: {}, remoteAddress: '10.99.0.1' })).statusCode)
  t.same(auth, [401, 401, 429], 'the sign-in routes\' own limit too')
})
