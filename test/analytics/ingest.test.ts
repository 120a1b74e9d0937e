import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, createPostgresDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { runScript } from '../support/run.ts'
import { openDatabase } from '../../db/index.ts'

const G1 = '900000000000000001'
const G2 = '900000000000000002'
const OTHER = '900000000000000003'
const ev = (o: Record<string, unknown> = {}) => ({ type: 'message', guildId: G1, channelId: 'c1', userId: 'u1', username: 'one', createdAt: '2025-03-01T10:00:00Z', ...o })

t.test('POST /api/activity', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 5 })
  t.teardown(() => handle.close())
  const apikey = (args: string[]) => runScript('scripts/apikey.ts', args, { DATABASE_URL: url })

  // Keys from the command: printed once, alone on the first line, URL-safe.
  const made = await apikey(['create', '--name', 'bot', '--guilds', `${G1},${G2}`])
  t.equal(made.code, 0, 'create exits 0', { stderr: made.stderr })
  const key = made.stdout.split('\n')[0]
  t.match(key, /^[A-Za-z0-9_-]{32,}$/, 'the key: at least 32 URL-safe characters')
  t.equal(made.stdout, `${key}\n`, 'alone on its own line')
  const { rows: stored } = await sql<{ key_hash: string }>`SELECT key_hash FROM api_keys`.execute(handle.db)
  t.notOk(JSON.stringify(stored).includes(key), 'stored hashed, not as given')
  t.match(stored[0].key_hash, /^[0-9a-f]{64}$/)
  const other = (await apikey(['create', '--name', 'other', '--guilds', OTHER])).stdout.trim()
  const list = await apikey(['list'])
  t.match(list.stdout, /\tbot\tgak_.{6}…\t900000000000000001,900000000000000002\tcreated .*\tnever used\tactive\n/)
  t.notOk(list.stdout.includes(key), 'the list does not show keys')
  t.equal((await apikey(['create', '--name', 'x'])).code, 2, 'create needs --guilds')
  t.equal((await apikey(['frob'])).code, 2)
  t.equal((await apikey(['revoke', '--id', '00000000-0000-4000-8000-000000000000'])).code, 1, 'revoking an unknown id')

  const app = await buildTestApp(t, handle, { API_KEY_RATE_LIMIT_MAX: 30, RATE_LIMIT_MAX: 1000 }, idp.env())
  const post = async (body: unknown, headers: Record<string, string> = { 'x-api-key': key }) => {
    const res = await app.inject({ method: 'POST', url: '/api/activity', headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' ? body : JSON.stringify(body) })
    return { status: res.statusCode, body: res.json(), limit: res.headers['x-ratelimit-limit'] }
  }
  const count = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity_events`.execute(handle.db)).rows[0].n

  t.test('all or nothing, idempotent by id', async (t) => {
    const batch = [
      ev({ id: 'm1' }),
      ev({ id: 'p1', type: 'presence', channelId: undefined, status: 'online', clients: ['web', 'mobile'] }),
      ev({ id: 'm1', guildId: G2 }),
      ev({ id: 'm1' }),
      ev({ type: 'typing' })
    ]
    t.match(await post({ events: batch }), { status: 200, body: { accepted: 4, duplicates: 1 } }, 'the same id in another guild is another event')
    t.equal(await count(), 4)
    t.same((await post({ events: batch })).body, { accepted: 1, duplicates: 4 }, 're-sent: only the event without id is stored again')
    t.equal(await count(), 5)

    const before = await count()
    const invalid = await post({ events: [ev({ id: 'new1' }), ev({ channelId: undefined }), ev({ type: 'presence', status: 'online', clients: ['web', 'web'] }), ev({ createdAt: '2025-03-01' })] })
    t.match(invalid, {
      status: 400,
      body: {
        error: 'Bad Request',
        message: '3 invalid events; nothing was stored',
        errors: [
          { index: 1, message: 'channelId is required for type "message"' },
          { index: 2, message: 'clients must not repeat a value' },
          { index: 3, message: 'createdAt must be an ISO 8601 date-time with a time zone (e.g. 2025-05-01T12:00:00Z)' }
        ]
      }
    })
    t.equal(await count(), before, 'nothing stored')
    t.match(await post({ events: [ev({ id: 'new2' }), ev({ guildId: OTHER })] }),
      { status: 403, body: { error: 'Forbidden', message: `This API key may not send events of guild ${OTHER}` } })
    t.equal(await count(), before, 'another guild\'s event: nothing stored')
    t.equal((await post({ events: [] })).status, 400, 'no events')
    t.equal((await post({ events: Array.from({ length: 1001 }, () => ev()) })).status, 400, 'more than 1000')
    t.equal((await post({ events: [ev()], extra: 1 })).status, 400, 'an unknown property')
    t.equal((await post('{"events": [')).status, 400, 'malformed JSON')
    const big = await post({ events: Array.from({ length: 900 }, () => ev({ username: 'x'.repeat(1200) })) })
    t.same([big.status, big.body.error], [413, 'Payload Too Large'], 'a body over 1 MiB')
    t.equal(await count(), before)
  })

  t.test('the key: required, revocable, for this route only', async (t) => {
    t.same((await post({ events: [ev()] }, {})).body, { error: 'Unauthorized', message: 'Missing X-API-Key header' })
    t.same((await post({ events: [ev()] }, { 'x-api-key': 'gak_' + 'A'.repeat(43) })).body, { error: 'Unauthorized', message: 'Invalid API key' })
    t.equal((await post({ events: [ev()] }, { 'x-api-key': 'nonsense' })).status, 401)
    // A bearer token does not work here.
    const token = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
    t.same((await post({ events: [ev()] }, { authorization: `Bearer ${token}` })).status, 401, 'a bearer token is no key')
    // And a key works nowhere else.
    const ghosts = await app.inject({ url: `/api/ghosts?guildId=${G1}`, headers: { 'x-api-key': key } })
    t.same([ghosts.statusCode, ghosts.json().message], [401, 'Missing authorization header'])
    const lurkers = await app.inject({ url: `/api/lurkers?guildId=${G1}`, headers: { 'x-api-key': key, authorization: `Bearer ${key}` } })
    t.equal(lurkers.statusCode, 401, 'not as a bearer token either')

    // The new events are in the answers at once.
    await sql`UPDATE users SET role = 'ADMIN'`.execute(handle.db)
    const admin = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
    const timeline = async () => (await app.inject({ url: `/api/members/u9/activity?guildId=${G2}`, headers: { authorization: `Bearer ${admin}` } })).json().events.length
    t.equal(await timeline(), 0)
    t.equal((await post({ events: [ev({ guildId: G2, userId: 'u9' })] }, { 'x-api-key': other })).status, 403, 'the other key is for another guild')
    t.equal((await post({ events: [ev({ guildId: G2, userId: 'u9' })] })).status, 200)
    t.equal(await timeline(), 1, 'answered at once')
    const { rows } = await sql<{ key: string }>`SELECT key FROM change_log WHERE kind = 'activity' ORDER BY id DESC LIMIT 1`.execute(handle.db)
    t.match(JSON.parse(rows[0].key), { guildId: G2, events: 1, types: { message: 1 } }, 'the load is announced on the change bus')

    const id = (await apikey(['list'])).stdout.split('\n').find((l) => l.includes('\tother\t'))!.split('\t')[0]
    t.equal((await apikey(['revoke', '--id', id])).code, 0)
    t.same((await post({ events: [ev({ guildId: OTHER })] }, { 'x-api-key': other })).body, { error: 'Unauthorized', message: 'Invalid API key' }, 'revoked: refused at once')
    t.match((await apikey(['list'])).stdout, /\tother\t.*\tREVOKED /)
  })

  t.test('its own rate-limit budget, per key', async (t) => {
    const fresh = (await apikey(['create', '--name', 'burst', '--guilds', G1])).stdout.trim()
    let last = null
    for (let i = 0; i < 31; i++) last = await post({ events: [ev()] }, { 'x-api-key': fresh })
    t.equal(last!.status, 429, 'past API_KEY_RATE_LIMIT_MAX requests with one key')
    t.equal(last!.limit, '30')
    const third = (await apikey(['create', '--name', 'calm', '--guilds', G1])).stdout.trim()
    t.equal((await post({ events: [ev()] }, { 'x-api-key': third })).status, 200, 'another key has its own budget')
    t.equal((await app.inject('/api/v1/stats')).statusCode, 200, 'and the per-IP budget is untouched')
  })

  t.test('guessing keys is limited per client, before any lookup, and a real key keeps its own budget', async (t) => {
    const codes = []
    const guess = (key: string) => app.inject({ method: 'POST', url: '/api/activity', remoteAddress: '10.77.0.1', headers: { 'x-api-key': key }, payload: { events: [ev()] } })
    for (let i = 0; i < 31; i++) codes.push((await guess(`gak_${String(i).padStart(43, 'x')}`)).statusCode)
    t.same([...new Set(codes.slice(0, 30))], [401], 'unknown keys are refused while the client is within its budget')
    t.equal(codes[30], 429, 'and limited past it, whatever key each guess names')
    const limited = await guess(key)
    t.same(limited.json(), { error: 'Too Many Requests', message: 'Rate limit exceeded' })
    t.match(limited.headers, { 'retry-after': /^\d+$/, 'x-ratelimit-limit': '30', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': /^\d+$/ }, 'with the seed\'s headers, even for a real key: the client is refused before any lookup')
    t.equal((await post({ events: [ev({ id: 'from-elsewhere' })] })).status, 200, 'the same key from another client is answered')
    const other = await app.inject({ method: 'POST', url: '/api/activity', remoteAddress: '10.20.30.40', headers: { 'x-api-key': 'not a key' }, payload: { events: [] } })
    t.equal(other.statusCode, 401, 'another client has its own budget')

    const missing = []
    for (let i = 0; i < 31; i++) {
      missing.push((await app.inject({ method: 'POST', url: '/api/activity', remoteAddress: `2001:db8:7:7::${(i + 1).toString(16)}`, payload: { events: [] } })).statusCode)
    }
    t.same([...new Set(missing.slice(0, 30))], [401], 'no key: refused while the client is within its budget')
    t.equal(missing[30], 429, 'one budget for an IPv6 /64, however its addresses rotate')
    t.equal((await app.inject({ method: 'POST', url: '/api/activity', remoteAddress: '2001:db8:7:8::1', payload: { events: [] } })).statusCode, 401, 'another /64 has its own')
  })
})
