import { request as httpRequest, type ClientRequest } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { StandInIdp } from '../test/support/idp-server.ts'
import { percentile } from './scale.ts'

/** A server started for the measurement with the environment given (on top of the bench's own). */
export interface FanoutServer {
  base: string
  // The server process's resident memory, when it can be read.
  memory: () => { rss_mb: number; peak_rss_mb: number } | null
  close: () => Promise<void>
}

export interface FanoutOptions {
  start: (env: Record<string, string>) => Promise<FanoutServer>
  // An ingestion API key of `guildId`, stored in the server's database.
  apiKey: string
  guildId: string
  streams: number
  users: number
  // Batches posted one after the other, each waited for on every stream before the next.
  rounds: number
  eventsPerRound: number
  log: (line: string) => void
}

export interface FanoutFigure {
  [metric: string]: number
  streams: number
  users: number
  rounds: number
  deliveries: number
  // Time from a batch's POST /api/activity being sent to its `activity` message read on a stream.
  p50_ms: number
  p99_ms: number
  max_ms: number
  // The POST's own time (the events stored, the answer back).
  post_p50_ms: number
  // How long opening every stream took (each: the guild rule checked, the first line read).
  open_seconds: number
  rss_mb: number
  // Messages that never came (within the wait), streams that failed to open or ended early.
  non2xx: number
}

// A round's messages are waited for this long at most; one not read by then counts as missed.
const DELIVERY_WAIT_MS = 10_000
// The pause between rounds: above the streams' one-message-a-second pacing, so a batch is never held back by the previous one.
const ROUND_GAP_MS = 1200
// Streams opened at a time.
const OPEN_CONCURRENCY = 50

interface Reader {
  request: ClientRequest
  // lastEventAt of each activity message, with the time it was read.
  received: Map<string, number>
  ended: string | null
}

/** Opens one stream with `token` and reads its server-sent events as they come. */
function openStream (base: string, guildId: string, token: string): Promise<Reader> {
  return new Promise((resolve, reject) => {
    const reader: Reader = { request: null as unknown as ClientRequest, received: new Map(), ended: null }
    // One connection per stream, as each browser tab holds its own.
    const request = httpRequest(`${base}/api/guilds/${guildId}/events`, { agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`the stream answered ${res.statusCode}`))
        return
      }
      res.setEncoding('utf8')
      let buffer = ''
      res.on('data', (chunk: string) => {
        const now = performance.now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event === 'activity' && data) reader.received.set((JSON.parse(data) as { lastEventAt: string }).lastEventAt, now)
          else if (event === 'end') reader.ended = data ?? 'end'
        }
      })
      res.on('close', () => { reader.ended ??= 'closed' })
      resolve(reader)
    })
    reader.request = request
    request.on('error', (err) => {
      reader.ended ??= err.message
      reject(err)
    })
    request.end()
  })
}

/**
 * Stream fan-out on one instance: `users` members sign in (through a stand-in identity provider, the
 * production sign-in path: GET /api/auth/identity with a code) as owners of the guild, and open `streams`
 * event streams of it between them (at most STREAM_MAX_PER_USER each). Then `rounds` batches are posted
 * to POST /api/activity one after the other, and for each the time from the POST being sent to its
 * `activity` message read on every stream is recorded. The server is started for the measurement with
 * a per-address connection cap above the streams (every stream comes from loopback).
 */
export async function streamFanout (options: FanoutOptions): Promise<FanoutFigure> {
  const { streams, users, rounds, guildId, log } = options
  const idp = await new StandInIdp().start()
  let server: FanoutServer | null = null
  const readers: Reader[] = []
  try {
    const perUser = Math.ceil(streams / users)
    server = await options.start({
      ...idp.env(),
      STREAM_MAX_PER_USER: String(perUser),
      // Every stream holds a connection of its address (loopback here): room for all, and for the posts.
      MAX_CONNECTIONS_PER_ADDRESS: String(streams + 64),
      MAX_CONNECTIONS: String(Math.max(10_000, streams + 256))
    })
    const base = server.base
    log(`  ${users} users sign in through the stand-in identity provider`)
    const tokens: string[] = []
    for (let i = 0; i < users; i++) {
      const id = String(300_000_000_000_000_000n + BigInt(i))
      idp.user = { id, username: `fan${i}`, discriminator: '0001', avatar: null }
      idp.guilds = [{ id: guildId, name: 'Bench guild', icon: null, owner: true, permissions: '0' }]
      const res = await fetch(`${base}/api/auth/identity?code=ok`)
      if (!res.ok) throw new Error(`sign-in ${i} answered ${res.status}: ${await res.text()}`)
      tokens.push(((await res.json()) as { accessToken: string }).accessToken)
    }

    log(`  opening ${streams} streams (${perUser} per user, ${OPEN_CONCURRENCY} at a time)`)
    const opened = performance.now()
    let next = 0
    let failedOpen = 0
    await Promise.all(Array.from({ length: OPEN_CONCURRENCY }, async () => {
      while (next < streams) {
        const i = next++
        try {
          readers.push(await openStream(base, guildId, tokens[i % users]!))
        } catch (err) {
          if (failedOpen++ === 0) log(`  a stream failed to open: ${(err as Error).message}`)
        }
      }
    }))
    const openSeconds = (performance.now() - opened) / 1000
    log(`  ${readers.length} streams open in ${openSeconds.toFixed(1)} s`)

    const latencies: number[] = []
    const posts: number[] = []
    let missed = 0
    for (let round = 0; round < rounds; round++) {
      await sleep(ROUND_GAP_MS)
      // Each round's events share one instant of their own: the messages' lastEventAt says which round they carry.
      const createdAt = new Date(Date.now() - 60_000 + round).toISOString()
      const events = Array.from({ length: options.eventsPerRound }, (_, i) => ({
        type: i % 3 === 0 ? 'typing' : 'message', guildId, channelId: '720000000000000001', userId: '300000000000000000', username: 'fan0', createdAt
      }))
      const sent = performance.now()
      const res = await fetch(`${base}/api/activity`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': options.apiKey }, body: JSON.stringify({ events }) })
      if (res.status !== 200) throw new Error(`POST /api/activity answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
      posts.push(performance.now() - sent)
      const deadline = sent + DELIVERY_WAIT_MS
      while (performance.now() < deadline && readers.some((r) => !r.received.has(createdAt) && r.ended === null)) await sleep(20)
      for (const reader of readers) {
        const at = reader.received.get(createdAt)
        if (at === undefined) missed++
        else latencies.push(at - sent)
      }
    }
    latencies.sort((a, b) => a - b)
    posts.sort((a, b) => a - b)
    const round1 = (x: number) => Math.round(x * 10) / 10
    const ended = readers.filter((r) => r.ended !== null).length
    if (ended) log(`  ${ended} streams ended early (${[...new Set(readers.map((r) => r.ended).filter(Boolean))].join(', ')})`)
    return {
      streams: readers.length,
      users,
      rounds,
      deliveries: latencies.length,
      p50_ms: round1(percentile(latencies, 0.5)),
      p99_ms: round1(percentile(latencies, 0.99)),
      max_ms: round1(latencies.at(-1) ?? NaN),
      post_p50_ms: round1(percentile(posts, 0.5)),
      open_seconds: round1(openSeconds),
      rss_mb: server.memory()?.rss_mb ?? NaN,
      non2xx: failedOpen + missed
    }
  } finally {
    for (const reader of readers) reader.request.destroy()
    await server?.close()
    await idp.stop()
  }
}
