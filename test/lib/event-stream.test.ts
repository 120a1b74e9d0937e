import t from 'tap'
import { EventStream, sseMessage, type EventKind } from '../../lib/event-stream.ts'
import { activityData, addActivity, parseActivityChange, type ActivitySummary } from '../../lib/activity/live.ts'
import { until } from '../support/shared-state.ts'

const sum: EventKind<number> = { event: 'n', merge: (a, b) => (a ?? 0) + b, data: (n) => ({ n }) }
const fast = { heartbeatMs: 60_000, minIntervalMs: 200, maxBufferedBytes: 1024, blockedMs: 300 }

// Everything the stream writes, as text.
function reader (stream: EventStream<number>) {
  const out = { text: '', ended: false, at: [] as [number, string][] }
  stream.on('data', (chunk: Buffer) => {
    out.text += chunk.toString()
    out.at.push([Date.now(), chunk.toString()])
  })
  stream.on('end', () => { out.ended = true })
  return out
}

t.test('one message at once, then at most one per interval with the updates merged', async (t) => {
  const stream = new EventStream(fast, sum)
  const out = reader(stream)
  const first = Date.now()
  stream.publish(1)
  await until(async () => out.text.includes('data: {"n":1}'), 1000)
  t.equal(out.text, ': open\n\nevent: n\ndata: {"n":1}\n\n', 'an open comment, then the first update at once')
  stream.publish(2)
  stream.publish(3)
  t.equal(stream.pending, 5, 'later updates wait, merged')
  await until(async () => out.text.includes('{"n":5}'), 1000)
  t.ok(out.at.find(([, chunk]) => chunk.includes('{"n":5}'))![0] - first >= 200, 'the interval after the first message')
  t.equal(stream.sent, 2)
  t.equal(stream.pending, null)
  stream.finish('end', { reason: 'done' })
  stream.publish(9)
  await until(async () => out.ended, 1000)
  t.match(out.text, /event: end\ndata: \{"reason":"done"\}\n\n$/, 'the last message, then the end')
  t.notMatch(out.text, /"n":9/, 'nothing after finish')
  t.equal(stream.finished, true)
})

t.test('a comment line every heartbeat', async (t) => {
  const stream = new EventStream({ ...fast, heartbeatMs: 30 }, sum)
  const out = reader(stream)
  await until(async () => out.text.split(': keep-alive\n\n').length > 2, 1000)
  t.ok(out.text.startsWith(': open\n\n: keep-alive\n\n'))
  stream.destroy()
  t.equal(stream.finished, true, 'a destroyed stream is finished')
})

t.test('a client that takes nothing: updates merge into one, and it is cut off after blockedMs', async (t) => {
  let waiting = 0
  let cut = 0
  const stream = new EventStream({ ...fast, heartbeatMs: 50 }, sum)
  stream.attach({ get writableLength () { return waiting }, destroy () { cut++ } })
  const out = reader(stream)
  stream.publish(1)
  await until(async () => out.text.includes('{"n":1}'), 1000)
  waiting = 64 * 1024
  t.equal(stream.bufferedBytes, waiting)
  for (let i = 0; i < 100; i++) stream.publish(1)
  t.equal(stream.pending, 100, 'one pending update')
  const before = out.text
  await until(async () => cut > 0, 2000)
  t.equal(cut, 1, 'cut off once it stayed behind')
  t.equal(out.text, before, 'nothing more was written to it, not even a heartbeat')
  t.equal(stream.sent, 1)
  t.equal(stream.pending, null, 'and nothing kept for it')
})

t.test('a client that catches up gets the merged update; finishing a stuck stream cuts it', async (t) => {
  let waiting = 64 * 1024
  let cut = 0
  const stream = new EventStream({ ...fast, blockedMs: 60_000 }, sum)
  stream.attach({ get writableLength () { return waiting }, destroy () { cut++ } })
  const out = reader(stream)
  stream.publish(2)
  stream.publish(3)
  await new Promise((resolve) => setTimeout(resolve, 250))
  t.equal(out.text, ': open\n\n', 'held while the client is behind')
  waiting = 0
  await until(async () => out.text.includes('{"n":5}'), 1000)
  t.equal(stream.sent, 1, 'one message with both updates')
  waiting = 64 * 1024
  stream.finish('end', { reason: 'server stopping' })
  t.equal(cut, 1, 'no last message for a client that reads nothing: cut off')
  const lone = new EventStream(fast, sum)
  lone.resume()
  lone.push('x'.repeat(4096))
  lone.finish('end', {})
  t.equal(lone.destroyed, true, 'without a response, the body itself is destroyed')
})

t.test('sseMessage', async (t) => {
  t.equal(sseMessage('e', { a: 'x\ny' }), 'event: e\ndata: {"a":"x\\ny"}\n\n', 'line breaks stay escaped inside the JSON')
})

t.test('activity changes: read back, merged, and their data', async (t) => {
  const key = JSON.stringify({ guildId: 'g', events: 3, types: { typing: 1, message: 2 }, lastEventAt: 1767225600000, load: '42' })
  const change = parseActivityChange(key)
  t.same(change, { guildId: 'g', events: 3, types: { typing: 1, message: 2 }, lastEventAt: 1767225600000, load: '42' })
  for (const bad of ['g', '', 'null', '[]', '{"guildId":"g"}', JSON.stringify({ ...JSON.parse(key), types: { voice: 1 } }),
    JSON.stringify({ ...JSON.parse(key), events: -1 }), JSON.stringify({ ...JSON.parse(key), types: null }), JSON.stringify({ ...JSON.parse(key), lastEventAt: 'x' })]) {
    t.equal(parseActivityChange(bad), null, `not a change: ${bad}`)
  }
  const merged = addActivity(addActivity(null, change!), { guildId: 'g', events: 2, types: { message: 1, join: 1 }, lastEventAt: 1767225500000 })
  t.same(merged, { guildId: 'g', events: 5, types: { typing: 1, message: 3, join: 1 }, lastEventAt: 1767225600000 })
  t.same(change!.types, { typing: 1, message: 2 }, 'the change itself is left as it was')
  const data = activityData(merged as ActivitySummary)
  t.same(Object.keys(data.types), ['message', 'typing', 'join'], 'types in their canonical order')
  t.equal(data.lastEventAt, '2026-01-01T00:00:00.000Z')
})
