import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { createPostgresDatabase } from '../helper.ts'
import { runScript } from '../support/run.ts'

const line = (o: object) => JSON.stringify({ type: 'typing', guildId: 'g1', channelId: 'c1', userId: 'u1', username: 'n', createdAt: '2025-01-01T00:00:00Z', ...o })

// Row counts and a digest of every activity table, to tell "unchanged" exactly.
async function snapshot (client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ s: string }>(`SELECT concat_ws(' ',
    (SELECT count(*) FROM activity_events),
    (SELECT md5(coalesce(string_agg(concat_ws('|', guild_id, channel_id, user_id, username, type, created_at), ',' ORDER BY created_at, user_id, type), '')) FROM activity_events),
    (SELECT md5(coalesce(string_agg(concat_ws('|', guild_id, day, user_id, typing_count, message_count), ',' ORDER BY guild_id, day, user_id), '')) FROM activity_daily),
    (SELECT md5(coalesce(string_agg(concat_ws('|', guild_id, user_id, username, typing_count, message_count), ',' ORDER BY guild_id, user_id), '')) FROM activity_users)) AS s`)
  return rows[0].s
}

t.test('import:activity', async (t) => {
  const url = await createPostgresDatabase(t)
  const dir = t.testdir({})
  const file = (name: string, lines: string[], eol = '\n') => {
    writeFileSync(join(dir, name), lines.join(eol) + eol)
    return join(dir, name)
  }
  const good = file('good.ndjson', [line({}), '', line({ type: 'message', createdAt: '2025-01-02T05:00:00+02:00' }), line({ userId: 'u2', username: 'm' })], '\r\n')
  const bad = file('bad.ndjson', [line({ userId: 'u3' }), line({ type: 'voice' }), line({ userId: 'u4' }), '{oops', line({ userId: 'u5' })])
  const many = file('many.ndjson', Array.from({ length: 30 }, (_, i) => (i % 2 ? line({ userId: `m${i}` }) : line({ createdAt: `2025-01-0${(i % 9) + 1}` }))))
  const run = (args: string[]) => runScript('scripts/import-activity.ts', args, { DATABASE_URL: url })

  const refusedEmpty = await run([bad])
  t.equal(refusedEmpty.code, 1, 'a file with invalid lines is refused')
  t.match(refusedEmpty.stderr, /invalid line 2: type must be one of "message", "typing", /)
  t.match(refusedEmpty.stderr, /invalid line 4: not valid JSON/)
  t.match(refusedEmpty.stderr, /error: .*bad\.ndjson: 2 invalid lines; nothing was loaded \(use --skip-invalid/)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  t.match(await snapshot(client), /^0 /, 'nothing loaded into the empty database')

  const loaded = await run([good])
  t.equal(loaded.code, 0, 'exit 0', { stderr: loaded.stderr })
  t.match(loaded.stdout, /^loaded 3 events from .*good\.ndjson in [\d.]+ s \(\d+ rows\/s\)$/m)
  t.match(loaded.stdout, /lines: 4, loaded: 3, invalid: 0$/m)
  t.match(loaded.stdout, /typing: 2, messages: 1; guilds: 1, users: 2, days: 2/)
  const before = await snapshot(client)
  t.match(before, /^3 /)

  const refused = await run([bad])
  t.equal(refused.code, 1)
  t.equal(await snapshot(client), before, 'a refused file leaves the loaded data exactly as it was')

  const capped = await run([many])
  t.equal(capped.code, 1)
  t.equal(capped.stderr.split('\n').filter((l) => l.startsWith('invalid line')).length, 15)
  t.equal(await snapshot(client), before)

  const skipping = await run([bad, '--skip-invalid'])
  t.equal(skipping.code, 0, 'exit 0', { stderr: skipping.stderr })
  t.match(skipping.stderr, /skipped line 2: type must be/)
  t.match(skipping.stderr, /skipped line 4: not valid JSON/)
  t.match(skipping.stdout, /lines: 5, loaded: 3, invalid: 2 \(skipped\)/)
  t.match(await snapshot(client), /^6 /, 'the valid lines are added')

  // Every type, ids unique per guild: a duplicate within the file and one already stored are skipped.
  const typed = file('typed.ndjson', [
    line({ id: 'e1', type: 'presence', channelId: undefined, status: 'online', clients: ['web', 'mobile'] }),
    line({ id: 'e2', type: 'reaction', latencyMs: 1200 }),
    line({ id: 'e1', type: 'message' }),
    line({ id: 'e1', guildId: 'g2', type: 'role_change', channelId: undefined, roleId: 'r1', change: 'added' }),
    line({ type: 'join', channelId: undefined }),
    line({ type: 'leave', channelId: undefined })
  ])
  const typedRun = await run([typed])
  t.equal(typedRun.code, 0, 'exit 0', { stderr: typedRun.stderr })
  t.match(typedRun.stdout, /^loaded 5 events/m)
  t.match(typedRun.stdout, /duplicates skipped: 1; by type: reaction 1, presence 1, role_change 1, join 1, leave 1$/m)
  const again = await run([typed])
  t.match(again.stdout, /^loaded 2 events/m, 'events without an id are never duplicates')
  t.match(again.stdout, /duplicates skipped: 4;/)
  const { rows: stored } = await client.query('SELECT event_id, type, channel_id, status, clients, role_id, change, latency_ms FROM activity_events WHERE event_id IS NOT NULL ORDER BY guild_id, event_id')
  t.same(stored, [
    { event_id: 'e1', type: 'presence', channel_id: null, status: 'online', clients: ['web', 'mobile'], role_id: null, change: null, latency_ms: null },
    { event_id: 'e2', type: 'reaction', channel_id: 'c1', status: null, clients: null, role_id: null, change: null, latency_ms: 1200 },
    { event_id: 'e1', type: 'role_change', channel_id: null, status: null, clients: null, role_id: 'r1', change: 'added', latency_ms: null }
  ])
  const badTyped = file('bad-typed.ndjson', [line({ type: 'reaction', latencyMs: -1 }), line({ type: 'presence', status: 'online', clients: ['web', 'web'] })])
  const refusedTyped = await run([badTyped])
  t.equal(refusedTyped.code, 1)
  t.match(refusedTyped.stderr, /invalid line 1: latencyMs must be an integer from 0/)
  t.match(refusedTyped.stderr, /invalid line 2: clients must not repeat a value/)

  const missing = await run([join(dir, 'nope.ndjson')])
  t.same([missing.code, missing.stderr.trim()], [1, `error: file not found: ${join(dir, 'nope.ndjson')}`], 'a missing file: one line')
  const usage = await run([])
  t.equal(usage.code, 2)
  t.match(usage.stderr, /usage: npm run import:activity -- <file\.ndjson> \[--skip-invalid\]/)
})

t.test('seed:activity is deterministic and seeds the demo guild', async (t) => {
  const url = await createPostgresDatabase(t)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  const seed = (args: string[]) => runScript('scripts/seed-activity.ts', args, { DATABASE_URL: url })
  const args = ['--guilds', '4', '--users', '30', '--events', '3000', '--seed', '5']

  const first = await seed(args)
  t.equal(first.code, 0, 'exit 0', { stderr: first.stderr })
  t.match(first.stdout, /^seeded 3000 events in [\d.]+ s \(\d+ rows\/s\)/)
  const once = await snapshot(client)
  t.match(once, /^3000 /)
  const again = await seed([...args, '--replace'])
  t.equal(again.code, 0, 'exit 0', { stderr: again.stderr })
  t.match(again.stdout, /replacing all activity/)
  t.equal(await snapshot(client), once, 'same arguments, same data')

  const refused = await seed(args)
  t.equal(refused.code, 1, 'a second seed without --replace or --append is refused')
  t.match(refused.stderr, /^error: the database already holds 3000 activity events; nothing was seeded/)
  t.equal(await snapshot(client), once, 'and adds nothing')
  const added = await seed([...args, '--append'])
  t.equal(added.code, 0, 'exit 0', { stderr: added.stderr })
  t.match(await snapshot(client), /^3000 /, 'with --append the same seed adds nothing: its events are duplicates')
  t.match(added.stdout, /seeded 0 events/)
  t.match(added.stdout, /duplicates skipped: 3000;/)
  const more = await seed([...args, '--seed', '7', '--append'])
  t.equal(more.code, 0, 'exit 0', { stderr: more.stderr })
  t.match(await snapshot(client), /^6000 /, 'with --append another seed adds')
  t.match(more.stdout, /by type: message \d+, typing \d+, message_delete \d+, reaction \d+, presence \d+, role_change \d+, join \d+/)
  const other = await seed(['--guilds', '4', '--users', '30', '--events', '3000', '--seed', '6', '--replace'])
  t.equal(other.code, 0, 'exit 0', { stderr: other.stderr })
  t.not(await snapshot(client), once, 'another seed, other data')

  const { rows } = await client.query<{ username: string }>("SELECT username FROM activity_users WHERE guild_id = '700000000000000001' AND user_id LIKE '10000000000000000_' ORDER BY user_id")
  t.same(rows.map((r) => r.username), ['ada', 'grace', 'linus'], 'the demo users act in the demo guild')
  const bad = await seed(['--events', 'many'])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--events must be an integer/)
})
