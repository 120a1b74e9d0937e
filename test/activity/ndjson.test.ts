import t from 'tap'
import { Readable } from 'node:stream'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createPostgresDatabase } from '../helper.ts'
import { runScript } from '../support/run.ts'
import { MAX_LINE_BYTES, parseActivityLine, readActivityLines, type LineResult } from '../../lib/activity/ndjson.ts'
import { isoFormatter, parseInstant } from '../../lib/activity/instant.ts'
import { createdAtRule } from '../../lib/activity/event.ts'

const ok = { type: 'typing', guildId: '1', channelId: '2', userId: '3', username: 'x', createdAt: '2025-01-01T00:00:00Z' }
const line = (o: object) => JSON.stringify(o)
// The default dates (test/analytics/future-events.test.ts covers the range itself).
const createdAt = createdAtRule({ ACTIVITY_MAX_FUTURE: '5m', ACTIVITY_MIN_DATE: '2015-01-01' })(Date.now())
const parseLine = (text: string) => parseActivityLine(text, createdAt)

t.test('a valid line gives the event with createdAt in UTC', async (t) => {
  t.same(parseLine(line(ok)), { ...ok, createdAt: '2025-01-01T00:00:00.000Z' })
  t.same(parseLine(line({ ...ok, type: 'message', createdAt: '2025-01-01T01:30:00.5+01:30' })), { ...ok, type: 'message', createdAt: '2025-01-01T00:00:00.500Z' })
  t.match(parseLine(line({ ...ok, createdAt: '2024-02-29t23:59:59.999999z' })), { createdAt: '2024-02-29T23:59:59.999Z' }, 'leap day, lower-case t/z, extra digits')
  t.match(parseLine(line({ ...ok, guildId: 'guild with spaces', username: 'tab\tand "quotes" ✓' })), { guildId: 'guild with spaces', username: 'tab\tand "quotes" ✓' })
  t.match(parseLine(line({ ...ok, messageId: '77' })), { userId: '3' }, 'other fields are ignored')
  t.notOk('messageId' in (parseLine(line({ ...ok, messageId: '77' })) as object))
  t.match(parseLine(line({ ...ok, channelId: 'c'.repeat(64), username: 'u'.repeat(100) })), { type: 'typing' }, 'longest values')
})

t.test('every type with its own fields', async (t) => {
  const at = '2025-01-01T00:00:00.000Z'
  const base = { guildId: '1', userId: '3', username: 'x', createdAt: at }
  t.same(parseLine(line({ ...base, id: 'e1', type: 'message_delete', channelId: '2' })), { ...base, id: 'e1', type: 'message_delete', channelId: '2' })
  t.same(parseLine(line({ ...base, type: 'reaction', channelId: '2', latencyMs: 0 })), { ...base, type: 'reaction', channelId: '2', latencyMs: 0 })
  t.same(parseLine(line({ ...base, type: 'reaction', channelId: '2' })), { ...base, type: 'reaction', channelId: '2' }, 'latencyMs optional')
  t.same(parseLine(line({ ...base, type: 'presence', status: 'dnd', clients: ['mobile', 'desktop'] })),
    { ...base, type: 'presence', status: 'dnd', clients: ['mobile', 'desktop'] })
  t.same(parseLine(line({ ...base, type: 'presence', status: 'offline' })), { ...base, type: 'presence', status: 'offline', clients: [] }, 'clients default []')
  t.same(parseLine(line({ ...base, type: 'presence', status: 'idle', channelId: 'v1' })), { ...base, type: 'presence', status: 'idle', clients: [], channelId: 'v1' }, 'an optional channel')
  t.same(parseLine(line({ ...base, type: 'role_change', roleId: 'r1', change: 'removed' })), { ...base, type: 'role_change', roleId: 'r1', change: 'removed' })
  t.same(parseLine(line({ ...base, type: 'join' })), { ...base, type: 'join' })
  t.same(parseLine(line({ ...base, type: 'leave', latencyMs: 5, status: 'online', roleId: 'r' })), { ...base, type: 'leave' }, 'other types\' fields are ignored')
  t.same(parseLine(line({ ...base, type: 'message', channelId: '2', latencyMs: -5 })), { ...base, type: 'message', channelId: '2' })
})

t.test('each invalid line gives its reason', async (t) => {
  const bad: [string, RegExp][] = [
    ['{not json', /^not valid JSON$/],
    ['', /^not valid JSON$/],
    ['[1,2]', /^not a JSON object$/],
    ['null', /^not a JSON object$/],
    ['"typing"', /^not a JSON object$/],
    [line({ ...ok, type: 'voice' }), /^type must be one of "message", "typing", "message_delete", "reaction", "presence", "role_change", "join", "leave"$/],
    [line({ ...ok, type: undefined }), /^type must be/],
    [line({ ...ok, guildId: undefined }), /^guildId must be a string$/],
    [line({ ...ok, guildId: '' }), /^guildId must not be empty$/],
    [line({ ...ok, channelId: '   ' }), /^channelId must not be empty$/],
    [line({ ...ok, userId: 5 }), /^userId must be a string$/],
    [line({ ...ok, userId: 'u'.repeat(65) }), /^userId must be at most 64 characters$/],
    [line({ ...ok, userId: 'a\u0000b' }), /^userId must not contain NUL/],
    [line({ ...ok, username: '' }), /^username must not be empty$/],
    [line({ ...ok, username: 'n'.repeat(101) }), /^username must be at most 100 characters$/],
    [line({ ...ok, username: null }), /^username must be a string$/],
    [line({ ...ok, createdAt: undefined }), /^createdAt must be an ISO 8601 date-time with a time zone/],
    [line({ ...ok, createdAt: 1735689600000 }), /^createdAt must be/],
    [line({ ...ok, createdAt: '2025-01-01' }), /^createdAt must be/],
    [line({ ...ok, createdAt: '2025-01-01T00:00:00' }), /^createdAt must be/],
    [line({ ...ok, createdAt: '2025-02-30T00:00:00Z' }), /^createdAt must be/],
    [line({ ...ok, createdAt: '2025-01-01T24:00:00Z' }), /^createdAt must be/],
    [line({ ...ok, createdAt: '2025-01-01T10:00:00+25:00' }), /^createdAt must be/],
    [line({ ...ok, createdAt: 'yesterday' }), /^createdAt must be/],
    [line({ ...ok, createdAt: '0000-01-01T00:00:00Z' }), /^createdAt must be/],
    [line({ ...ok, channelId: undefined }), /^channelId is required for type "typing"$/],
    [line({ ...ok, type: 'reaction', channelId: undefined }), /^channelId is required for type "reaction"$/],
    [line({ ...ok, id: '' }), /^id must not be empty$/],
    [line({ ...ok, id: 'i'.repeat(65) }), /^id must be at most 64 characters$/],
    [line({ ...ok, type: 'reaction', latencyMs: -1 }), /^latencyMs must be an integer from 0 to 2147483647$/],
    [line({ ...ok, type: 'reaction', latencyMs: 1.5 }), /^latencyMs must be an integer/],
    [line({ ...ok, type: 'reaction', latencyMs: '100' }), /^latencyMs must be an integer/],
    [line({ ...ok, type: 'presence' }), /^status must be one of "online", "idle", "dnd", "offline" for type "presence"$/],
    [line({ ...ok, type: 'presence', status: 'away' }), /^status must be one of/],
    [line({ ...ok, type: 'presence', status: 'online', clients: ['desktop', 'desktop'] }), /^clients must not repeat a value$/],
    [line({ ...ok, type: 'presence', status: 'online', clients: ['tv'] }), /^clients must be an array of "desktop", "web", "mobile"$/],
    [line({ ...ok, type: 'presence', status: 'online', clients: 'web' }), /^clients must be an array/],
    [line({ ...ok, type: 'presence', status: 'online', channelId: '' }), /^channelId must not be empty$/],
    [line({ ...ok, type: 'role_change', change: 'added' }), /^roleId is required for type "role_change"$/],
    [line({ ...ok, type: 'role_change', roleId: 'r1' }), /^change must be one of "added", "removed" for type "role_change"$/],
    [line({ ...ok, type: 'role_change', roleId: 'r1', change: 'granted' }), /^change must be one of/]
  ]
  for (const [text, reason] of bad) t.match(parseLine(text), reason, text.slice(0, 60))
})

t.test('lines are numbered from 1, blank lines skipped but counted, CRLF and a BOM handled', async (t) => {
  const text = '\uFEFF' + [line(ok), '', '   ', line({ ...ok, type: 'voice' }), '{oops', line({ ...ok, userId: '9' })].join('\r\n') + '\r\n'
  const results = []
  for await (const r of readActivityLines(Readable.from([text]), { createdAt })) results.push(r.error !== undefined ? [r.lineNumber, r.error] : [r.lineNumber, r.event.userId])
  t.same(results, [[1, '3'], [4, 'type must be one of "message", "typing", "message_delete", "reaction", "presence", "role_change", "join", "leave"'], [5, 'not valid JSON'], [6, '9']])
})

t.test('strict ISO 8601 instants', async (t) => {
  const zoned = { requireZone: true, allowDateOnly: false }
  const loose = { requireZone: false, allowDateOnly: true }
  t.equal(parseInstant('2025-06-01T12:00:00Z', zoned), Date.UTC(2025, 5, 1, 12))
  t.equal(parseInstant('2025-06-01T12:00:00-0230', zoned), Date.UTC(2025, 5, 1, 14, 30))
  t.equal(parseInstant('2025-06-01T12:00+02', zoned), Date.UTC(2025, 5, 1, 10))
  t.equal(parseInstant('2025-06-01 12:00:00,25Z', zoned), Date.UTC(2025, 5, 1, 12, 0, 0, 250))
  t.equal(parseInstant('2025-06-01T12:00:00', zoned), null, 'zone required')
  t.equal(parseInstant('2025-06-01T12:00:00', loose), Date.UTC(2025, 5, 1, 12), 'no zone: UTC')
  t.equal(parseInstant('2025-06-01', loose), Date.UTC(2025, 5, 1), 'a date: its midnight UTC')
  t.equal(parseInstant('2025-06-01', zoned), null)
  t.equal(parseInstant('0099-01-01T00:00:00Z', zoned), new Date('0099-01-01T00:00:00Z').getTime(), 'two-digit years stay literal')
  for (const bad of ['2025-6-1', '2025-06-31', '2023-02-29', '2025-00-10', '2025-06-01T12:60', '2025-06-01T12:00:61Z', '2025-06-01T12', '9999-12-31T23:00:00-05:00', ' 2025-06-01', '2025-06-01T12:00:00Z ']) {
    t.equal(parseInstant(bad, loose), null, bad)
  }
})

t.test('the fast ISO formatter equals toISOString', async (t) => {
  const iso = isoFormatter()
  const samples = [0, 1, 86_399_999, 86_400_000, 1_735_689_599_999, 1_735_689_600_000, 253_402_300_799_999]
  for (let i = 0; i < 2000; i++) samples.push(1_700_000_000_000 + i * 7_919_357)
  for (const ms of samples) if (iso(ms) !== new Date(ms).toISOString()) t.fail(`${ms}: ${iso(ms)}`)
  t.pass(`${samples.length} instants`)
})

const summarize = (r: LineResult) => (r.error !== undefined ? [r.lineNumber, r.error] : [r.lineNumber, r.event.userId])

t.test('a line past the length limit is one invalid line, and the next lines still read', async (t) => {
  t.equal(MAX_LINE_BYTES, 1024 * 1024)
  const long = line({ ...ok, username: 'x'.repeat(200) })
  const text = [line(ok), long, line({ ...ok, userId: '7' }), long].join('\r\n')
  const byChunk = async (size: number) => {
    const chunks: Buffer[] = []
    const bytes = Buffer.from(text)
    for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size))
    const results = []
    for await (const r of readActivityLines(Readable.from(chunks), { createdAt, maxLineBytes: 150 })) results.push(summarize(r))
    return results
  }
  const expected = [[1, '3'], [2, 'line is longer than 150 bytes'], [3, '7'], [4, 'line is longer than 150 bytes']]
  for (const size of [text.length, 1, 7, 64]) t.same(await byChunk(size), expected, `chunks of ${size}`)

  // Exactly at the limit is fine; the CR of a CRLF does not count.
  const exact = line({ ...ok, username: 'y'.repeat(50) })
  const results = []
  for await (const r of readActivityLines(Readable.from([`${exact}\r\n${exact}`]), { createdAt, maxLineBytes: Buffer.byteLength(exact) })) results.push(summarize(r))
  t.same(results, [[1, '3'], [2, '3']])
})

t.test('an endless line is reported while it arrives, without being held', async (t) => {
  let produced = 0
  const total = 64 * 1024 * 1024
  async function * source (): AsyncGenerator<Buffer> {
    const piece = Buffer.alloc(64 * 1024, 'x')
    while (produced < total) {
      produced += piece.length
      yield piece
    }
    yield Buffer.from(`\n${line({ ...ok, userId: 'after' })}\n`)
  }
  const results: (string | number)[][] = []
  let producedAtError = -1
  for await (const r of readActivityLines(source(), { createdAt })) {
    if (r.error !== undefined && producedAtError < 0) producedAtError = produced
    results.push(summarize(r))
  }
  t.same(results, [[1, 'line is longer than 1048576 bytes (1 MiB)'], [2, 'after']])
  t.ok(producedAtError > 0 && producedAtError <= MAX_LINE_BYTES + 128 * 1024, `reported after ${producedAtError} bytes of ${total}`)
})

t.test('import:activity reports an over-long line with its number', async (t) => {
  const url = await createPostgresDatabase(t)
  const dir = t.testdir({})
  const file = join(dir, 'long.ndjson')
  writeFileSync(file, [line(ok), `{"type":"typing","username":"${'z'.repeat(2 * 1024 * 1024)}"}`, line({ ...ok, userId: '8' })].join('\n') + '\n')
  const refused = await runScript('scripts/import-activity.ts', [file], { DATABASE_URL: url })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^invalid line 2: line is longer than 1048576 bytes \(1 MiB\)$/m)
  t.match(refused.stderr, /^error: .*long\.ndjson: 1 invalid line; nothing was loaded/m)
  t.notMatch(refused.stderr, /\n\s+at /, 'no stack trace')
  const skipped = await runScript('scripts/import-activity.ts', [file, '--skip-invalid'], { DATABASE_URL: url })
  t.equal(skipped.code, 0, skipped.stderr)
  t.match(skipped.stdout, /lines: 3, loaded: 2, invalid: 1 \(skipped\)/)
})
