import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from '../../db/kysely.ts'
import { openDatabase } from '../../db/index.ts'
import { buildTestApp, createPostgresDatabase } from '../helper.ts'
import { ingestionKey } from '../support/activity.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { runScript } from '../support/run.ts'
import { createdAtRule, validateActivityEvent } from '../../lib/activity/event.ts'
import { syntheticActivity, SYNTHETIC_DAYS, SYNTHETIC_END } from '../../lib/activity/synthetic.ts'
import { demoActivity } from '../../db/sample/activity.ts'
import { describeDuration, durationMs } from '../../lib/duration.ts'

const G = '900000000000000001'
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const iso = (ms: number) => new Date(ms).toISOString()
const ev = (o: Record<string, unknown> = {}) => ({ type: 'typing', guildId: G, channelId: 'c1', userId: 'u1', username: 'current', createdAt: iso(Date.now() - HOUR), ...o })
const FUTURE = /^createdAt must not be more than 5 minutes in the future \(later than \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)$/

t.test('ingestion refuses events dated in the future or before the floor', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const url = await createPostgresDatabase(t, { migrated: true })
  const handle = await openDatabase({ url, poolMax: 5 })
  t.teardown(() => handle.close())
  const key = await ingestionKey(handle, [G])
  const count = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity_events`.execute(handle.db)).rows[0].n

  t.test('POST /api/activity: past the skew, named by index; nothing stored; the username is not pinned', async (t) => {
    const app = await buildTestApp(t, handle, { API_KEY_RATE_LIMIT_MAX: 1000 }, idp.env())
    const post = async (events: unknown[]) => {
      const res = await app.inject({ method: 'POST', url: '/api/activity', headers: { 'x-api-key': key }, payload: { events } })
      return { status: res.statusCode, body: res.json() }
    }
    const token = (await app.inject('/api/auth/identity?code=ok')).json().accessToken as string
    const ghosts = async () => (await app.inject({ url: `/api/ghosts?guildId=${G}`, headers: { authorization: `Bearer ${token}` } })).json().ghosts

    t.match(await post([ev({ id: 'a' })]), { status: 200, body: { accepted: 1 } })
    const pinned = await post([ev({ id: 'b' }), ev({ id: 'c', username: 'pinned', createdAt: '9999-12-31T23:59:59Z' })])
    t.same(pinned.status, 400, 'an event of year 9999 refuses the batch')
    t.match(pinned.body, { error: 'Bad Request', message: '1 invalid event; nothing was stored', errors: [{ index: 1, message: FUTURE }] })
    t.equal(pinned.body.errors?.length, 1)
    t.equal(await count(), 1, 'nothing of the batch was stored')
    t.match(await ghosts(), [{ userId: 'u1', username: 'current', typingCount: 1 }], 'the member keeps the name of their latest real event')

    const now = Date.now()
    const soon = await post([
      ev({ createdAt: iso(now + 3 * MINUTE), username: 'skewed' }),
      ev({ createdAt: iso(now + 6 * MINUTE) }),
      ev(),
      // The same instant written in another zone: compared as instants, not as text.
      ev({ createdAt: new Date(now + 7 * MINUTE - 5 * HOUR).toISOString().replace('Z', '-05:00') }),
      ev({ createdAt: '2014-12-31T23:59:59.999Z' }),
      ev({ createdAt: '0001-01-01T00:00:00Z' })
    ])
    t.match(soon, {
      status: 400,
      body: {
        message: '4 invalid events; nothing was stored',
        errors: [
          { index: 1, message: FUTURE },
          { index: 3, message: FUTURE },
          { index: 4, message: 'createdAt must not be before 2015-01-01T00:00:00.000Z' },
          { index: 5, message: 'createdAt must not be before 2015-01-01T00:00:00.000Z' }
        ]
      }
    })
    t.equal(soon.body.errors?.length, 4, 'every refused event named, the others not')
    t.match(await post([ev({ createdAt: iso(Date.now() + 3 * MINUTE), username: 'skewed' }), ev({ createdAt: '2015-01-01T00:00:00Z' })]),
      { status: 200, body: { accepted: 2 } }, 'a sender\'s clock a little ahead, and the floor itself, are accepted')
    t.equal(await count(), 3)
  })

  t.test('ACTIVITY_MAX_FUTURE and ACTIVITY_MIN_DATE set the bounds', async (t) => {
    const app = await buildTestApp(t, handle, { API_KEY_RATE_LIMIT_MAX: 1000, ACTIVITY_MAX_FUTURE: '1h', ACTIVITY_MIN_DATE: '2020-06-01' }, idp.env())
    const res = await app.inject({
      method: 'POST',
      url: '/api/activity',
      headers: { 'x-api-key': key },
      payload: { events: [ev({ createdAt: iso(Date.now() + 30 * MINUTE) }), ev({ createdAt: iso(Date.now() + 2 * HOUR) }), ev({ createdAt: '2020-05-31T23:59:59Z' }), ev({ createdAt: '2020-06-01T00:00:00Z' })] }
    })
    t.match(res.json(), {
      message: '2 invalid events; nothing was stored',
      errors: [
        { index: 1, message: /^createdAt must not be more than 1 hour in the future \(later than / },
        { index: 2, message: 'createdAt must not be before 2020-06-01T00:00:00.000Z' }
      ]
    })
    t.equal(res.json().errors?.length, 2)
    for (const [name, value, problem] of [
      ['ACTIVITY_MAX_FUTURE', 'soon', /^invalid configuration: ACTIVITY_MAX_FUTURE is not a duration \(got "soon"/],
      ['ACTIVITY_MIN_DATE', 'yesterday', /^invalid configuration: ACTIVITY_MIN_DATE is not a date \(got "yesterday"/],
      ['ACTIVITY_MIN_DATE', '2999-01-01', /^invalid configuration: ACTIVITY_MIN_DATE is in the future/]
    ] as const) {
      await t.rejects(buildTestApp(t, handle, { [name]: value } as object, idp.env()), problem, `${name}=${value} stops the start`)
    }
  })

  t.test('import:activity names the refused lines, and follows the settings', async (t) => {
    const dir = t.testdir({})
    const line = (o: Record<string, unknown>) => JSON.stringify(ev({ userId: 'cli', ...o }))
    const file = join(dir, 'events.ndjson')
    writeFileSync(file, [
      line({}),
      line({ createdAt: '9999-12-31T23:59:59Z' }),
      line({ createdAt: '2010-01-01T00:00:00Z' }),
      line({ createdAt: iso(Date.now() + 2 * MINUTE) }),
      line({ createdAt: iso(Date.now() + 2 * HOUR) })
    ].join('\n') + '\n')
    const before = await count()
    const refused = await runScript('scripts/import-activity.ts', [file], { DATABASE_URL: url })
    t.equal(refused.code, 1, 'the file is refused')
    t.match(refused.stderr, /^invalid line 2: createdAt must not be more than 5 minutes in the future \(later than .*Z\)$/m)
    t.match(refused.stderr, /^invalid line 3: createdAt must not be before 2015-01-01T00:00:00.000Z$/m)
    t.match(refused.stderr, /^invalid line 5: createdAt must not be more than 5 minutes in the future/m)
    t.notMatch(refused.stderr, /line [14]:/)
    t.match(refused.stderr, /3 invalid lines; nothing was loaded/)
    t.equal(await count(), before)

    const skipped = await runScript('scripts/import-activity.ts', [file, '--skip-invalid'], { DATABASE_URL: url })
    t.equal(skipped.code, 0, 'exit 0', { stderr: skipped.stderr })
    t.match(skipped.stderr, /^skipped line 2: createdAt must not be more than 5 minutes in the future/m)
    t.match(skipped.stdout, /lines: 5, loaded: 2, invalid: 3 \(skipped\)/)

    const wider = await runScript('scripts/import-activity.ts', [file, '--skip-invalid'], { DATABASE_URL: url, ACTIVITY_MAX_FUTURE: '3h', ACTIVITY_MIN_DATE: '2009-01-01' })
    t.match(wider.stdout, /lines: 5, loaded: 4, invalid: 1 \(skipped\)/, 'the settings apply to the CLI too')
    t.match(wider.stderr, /^skipped line 2: createdAt must not be more than 3 hours in the future/m)

    const bad = await runScript('scripts/import-activity.ts', [file], { DATABASE_URL: url, ACTIVITY_MAX_FUTURE: 'later' })
    t.equal(bad.code, 1)
    t.match(bad.stderr, /^error: invalid configuration: ACTIVITY_MAX_FUTURE is not a duration/m)
  })
})

t.test('the range: both ends included, measured from the moment given', async (t) => {
  const now = Date.UTC(2026, 5, 1, 12)
  const range = createdAtRule({ ACTIVITY_MAX_FUTURE: '90s', ACTIVITY_MIN_DATE: '2015-01-01T00:00:00+01:00' }, now)(now)
  t.same(range, { notBefore: Date.UTC(2014, 11, 31, 23), notAfter: now + 90_000, skew: '90 seconds' })
  const check = (ms: number) => validateActivityEvent(ev({ createdAt: iso(ms) }), range)
  t.match(check(now + 90_000), { createdAt: iso(now + 90_000) }, 'the skew\'s last millisecond')
  t.equal(check(now + 90_001), 'createdAt must not be more than 90 seconds in the future (later than 2026-06-01T12:01:30.000Z)')
  t.match(check(range.notBefore), { type: 'typing' }, 'the floor itself')
  t.equal(check(range.notBefore - 1), 'createdAt must not be before 2014-12-31T23:00:00.000Z')
  t.same(['1d', '2h', '5m', '1s', '1500', '36h'].map((d) => describeDuration(durationMs(d)!)),
    ['1 day', '2 hours', '5 minutes', '1 second', '1500 milliseconds', '36 hours'], 'the skew in words, exactly')
})

t.test('seeding stays within the dates ingestion accepts', async (t) => {
  const range = createdAtRule({ ACTIVITY_MAX_FUTURE: '5m', ACTIVITY_MIN_DATE: '2015-01-01' })(Date.now())
  // The embedded database's demo activity (ending at its first start) and the seed's fixed and --now ends.
  const midnight = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000)
  for (const end of [new Date(), SYNTHETIC_END, midnight]) {
    let refused = 0
    for (const e of syntheticActivity({ ...demoActivity, end })) if (typeof validateActivityEvent(e, range) === 'string') refused++
    t.equal(refused, 0, `every event accepted, ending ${end.toISOString()}`)
  }

  const url = await createPostgresDatabase(t)
  const seed = (args: string[], env: Record<string, string> = {}) =>
    runScript('scripts/seed-activity.ts', ['--guilds', '1', '--users', '10', '--events', '300', ...args], { DATABASE_URL: url, ...env })
  const seeded = await seed([])
  t.equal(seeded.code, 0, 'the default seed', { stderr: seeded.stderr })
  t.equal((await seed(['--now', '--append'])).code, 0, 'the seed ending today')
  const first = new Date(SYNTHETIC_END.getTime() - SYNTHETIC_DAYS * 86_400_000).toISOString()
  const refused = await seed(['--append'], { ACTIVITY_MIN_DATE: '2025-12-01' })
  t.equal(refused.code, 1, 'a seed older than ACTIVITY_MIN_DATE is refused')
  t.match(refused.stderr, `error: the seed's events (${first} to ${SYNTHETIC_END.toISOString()}) fall outside the accepted dates (from ACTIVITY_MIN_DATE, 2025-12-01T00:00:00.000Z`)
})
