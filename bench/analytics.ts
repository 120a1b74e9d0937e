// The guild analytics figures (--analytics, and the full run after the boxes): the activity seed, ghosts
// and the analytics routes of one guild over 30 days, what the dashboard ships and its cold load in
// Chromium, ingestion through POST /api/activity and stream fan-out.

import { gzipSync } from 'node:zlib'
import { openMigratedDatabase } from '../commands/cli.ts'
import { SYNTHETIC_END, syntheticActivity } from '../lib/activity/synthetic.ts'
import { loadConfig } from '../lib/config.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../lib/auth/api-keys.ts'
import { createApiKey } from '../db/api-keys.ts'
import { dashboardColdLoad } from './dashboard-load.ts'
import { streamFanout } from './stream-fanout.ts'
import { percentile } from './scale.ts'
import { GUILDS, log, results, round2, sizes } from './report.ts'
import { LOADER, memoryMb, run, startServer, stop } from './processes.ts'
import { getBytes, load, record } from './load.ts'

export const BATCH = 1000
export const INGEST_CONCURRENCY = 4
// The figures of --analytics (the names of bench/targets.json).
const ANALYTICS_ROUTES = ['overview', 'lurkers', 'heatmap', 'roles', 'clients', 'shifts', 'suspicion', 'member activity']
const DASHBOARD_SHIPPED = 'dashboard shipped (JS + CSS, gzip)'
const DASHBOARD_COLD = 'dashboard cold load to the overview drawn'
const INGESTION = `ingestion (API, batches of ${BATCH})`
const INGESTION_SERIAL = `ingestion (API, batches of ${BATCH}, 1 at a time)`
// Stream fan-out: this many streams of one guild on one instance, held by this many signed-in users.
const FANOUT_STREAMS = 1000
const FANOUT_USERS = 200
const FANOUT_ROUNDS = 10
const STREAM_FANOUT = `stream fan-out (${FANOUT_STREAMS} streams, ingestion to delivery)`
export const ANALYTICS_FIGURES = ['activity seed', 'ghosts (one guild, 1 connection)', 'ghosts (one guild, 32 connections)',
  ...ANALYTICS_ROUTES.map((name) => `${name} (one guild, 30 days, 1 connection)`), DASHBOARD_SHIPPED, DASHBOARD_COLD, INGESTION, INGESTION_SERIAL, STREAM_FANOUT]

export async function seedActivity (DATABASE_URL: string) {
  log(`seeding ${sizes().events} activity events over ${GUILDS} guilds`)
  // The seed's progress lines are shown as they come: a long seed says how far it is.
  const act = await run(process.execPath, ['--import', LOADER, 'scripts/seed-activity.ts', '--guilds', String(GUILDS), '--users', String(sizes().users), '--events', String(sizes().events), '--seed', '7'], { DATABASE_URL },
    (text) => process.stderr.write(text.replace(/^(?=.)/gm, '  seed: ')))
  if (act.code !== 0) throw new Error(`activity seed failed: ${act.stderr}`)
  results.figures['activity seed'] = { events: sizes().events, guilds: GUILDS, users: sizes().users, seconds: Math.round(act.seconds * 10) / 10, per_second: Math.round(sizes().events / act.seconds) }
  log(`  ${results.figures['activity seed'].per_second} events/s (wall clock, including start-up)`)
}

// Ghosts and the seven analytics routes of one guild, then ingestion through the API.
export async function measureAnalytics (DATABASE_URL: string, base: string, token: string | null) {
  if (token) {
    log('load: ghosts, one guild')
    const ghosts = `${base}/api/ghosts?guildId=700000000000000001&limit=100`
    const headers = { authorization: `Bearer ${token}` }
    record('ghosts (one guild, 1 connection)', await load(ghosts, { headers, connections: 1 }))
    record('ghosts (one guild, 32 connections)', await load(ghosts, { headers }))
    // The other analytics routes over the seed's last 30 days (it ends at SYNTHETIC_END), one connection.
    const window = `guildId=700000000000000001&since=${new Date(SYNTHETIC_END.getTime() - 30 * 86_400_000).toISOString()}&until=${SYNTHETIC_END.toISOString()}`
    const paths: Record<string, string> = {
      overview: `/api/overview?${window}&timeZone=Europe/Paris`,
      lurkers: `/api/lurkers?${window}`,
      heatmap: `/api/heatmap?${window}&timeZone=Europe/Paris`,
      roles: `/api/roles?${window}`,
      clients: `/api/clients?${window}`,
      shifts: `/api/shifts?${window}`,
      suspicion: `/api/suspicion?${window}`,
      'member activity': `/api/members/100000000000000001/activity?${window}`
    }
    for (const name of ANALYTICS_ROUTES) {
      log(`load: ${name}, one guild`)
      record(`${name} (one guild, 30 days, 1 connection)`, await load(`${base}${paths[name]}`, { headers, connections: 1 }))
    }
  }
  results.figures[DASHBOARD_SHIPPED] = await dashboardShipped(base)
  log(`  the dashboard ships ${results.figures[DASHBOARD_SHIPPED].kb} KB of JS and CSS, gzipped`)
  log('the dashboard: cold loads in Chromium, to the overview drawn')
  results.figures[DASHBOARD_COLD] = await dashboardColdLoad(base)
  // Last: the new events change the answers above.
  await measureIngestion(DATABASE_URL, base)
  await measureFanout(DATABASE_URL)
}

/**
 * Stream fan-out (bench/stream-fanout.ts) on a server of its own over the same database: its users sign in
 * through a stand-in identity provider (the development one knows three people), and its per-address
 * connection cap leaves room for every stream from loopback.
 */
async function measureFanout (DATABASE_URL: string) {
  log(`load: stream fan-out, ${FANOUT_STREAMS} streams of one guild held by ${FANOUT_USERS} users, ${FANOUT_ROUNDS} batches posted`)
  const guildId = '700000000000000001'
  const apiKey = await storeApiKey(DATABASE_URL, [guildId])
  const f = await streamFanout({
    start: async (env) => {
      const server = await startServer(DATABASE_URL, env)
      return { base: server.base, memory: () => (server.child.pid ? memoryMb(server.child.pid) : null), close: () => stop(server.child) }
    },
    apiKey,
    guildId,
    streams: FANOUT_STREAMS,
    users: FANOUT_USERS,
    rounds: FANOUT_ROUNDS,
    eventsPerRound: 10,
    log
  })
  results.figures[STREAM_FANOUT] = f
  log(`  ${STREAM_FANOUT}: p50 ${f.p50_ms} ms, p99 ${f.p99_ms} ms over ${f.deliveries} deliveries (the POST itself p50 ${f.post_p50_ms} ms), server RSS ${f.rss_mb} MB${f.non2xx ? `, ${f.non2xx} missed` : ''}`)
}

// A new ingestion API key of the guilds, stored in the bench's database.
async function storeApiKey (DATABASE_URL: string, guildIds: string[]): Promise<string> {
  const handle = await openMigratedDatabase(loadConfig({ DATABASE_URL }))
  const key = generateApiKey()
  try {
    await createApiKey(handle.db, { name: 'bench', keyHash: hashApiKey(key), prefix: apiKeyPrefix(key), guildIds })
  } finally {
    await handle.close()
  }
  return key
}

/**
 * What a first visit to /dashboard downloads, as the server sends it: the page's scripts and style sheets,
 * and every module they import (followed from their static imports), each gzipped at level 9.
 */
async function dashboardShipped (base: string): Promise<{ files: number; bytes: number; kb: number }> {
  const page = await getBytes(`${base}/dashboard`)
  const html = page.body.toString('utf8')
  const queue = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="stylesheet"[^>]*\shref)="([^"]+)"/g)].map((m) => new URL(m[1]!, `${base}/dashboard`).href)
  const seen = new Set<string>()
  let bytes = 0
  while (queue.length) {
    const url = queue.shift()!
    if (seen.has(url)) continue
    seen.add(url)
    const { status, body } = await getBytes(url)
    if (status !== 200) throw new Error(`${url} answered ${status}`)
    bytes += gzipSync(body, { level: 9 }).length
    if (url.endsWith('.js')) {
      for (const m of body.toString('utf8').matchAll(/(?:\bfrom|\bimport)\s*['"](\.{1,2}\/[^'"]+)['"]/g)) queue.push(new URL(m[1]!, url).href)
    }
  }
  return { files: seen.size, bytes, kb: Math.round(bytes / 102.4) / 10 }
}

/**
 * New events of the seed's guilds and members (another seed of the same generator: the same mix of types,
 * ids of their own), as request bodies of BATCH events, made before any is sent.
 */
function ingestionBodies (count: number): { bodies: string[]; guilds: string[] } {
  const guilds = new Set<string>()
  const bodies: string[] = []
  let batch: unknown[] = []
  for (const event of syntheticActivity({ guilds: GUILDS, users: sizes().users, events: count * BATCH, seed: 8 })) {
    guilds.add(event.guildId)
    batch.push(event)
    if (batch.length === BATCH) {
      bodies.push(JSON.stringify({ events: batch }))
      batch = []
    }
  }
  return { bodies, guilds: [...guilds] }
}

// Sends the bodies with `concurrency` requests in flight; each answer must store the whole batch.
async function sendBatches (base: string, key: string, bodies: string[], concurrency: number) {
  const latencies: number[] = []
  let next = 0
  let failed = 0
  let accepted = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < bodies.length) {
      const body = bodies[next++]
      const t0 = performance.now()
      try {
        const res = await fetch(`${base}/api/activity`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body })
        const answer = await res.json() as { accepted?: number; message?: string }
        latencies.push(performance.now() - t0)
        if (res.status !== 200 || answer.accepted !== BATCH) {
          if (failed++ === 0) log(`  a batch answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`)
        } else accepted += answer.accepted
      } catch (err) {
        failed++
        log(`  a batch failed: ${(err as Error).message}`)
      }
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return { events: accepted, batches: bodies.length, concurrency, seconds: round2(seconds), per_second: Math.round(accepted / seconds), p50_ms: round2(percentile(latencies, 0.5)), p99_ms: round2(percentile(latencies, 0.99)), non2xx: failed }
}

// Ingestion through POST /api/activity with an API key of every seeded guild: INGEST_CONCURRENCY requests at a time, then one at a time.
async function measureIngestion (DATABASE_URL: string, base: string) {
  const { ingestBatches, serialBatches } = sizes()
  log(`load: ingestion through the API, ${ingestBatches} batches of ${BATCH} ${INGEST_CONCURRENCY} at a time, then ${serialBatches} one at a time`)
  const { bodies, guilds } = ingestionBodies(ingestBatches + serialBatches + 2)
  const key = await storeApiKey(DATABASE_URL, guilds)
  // Warm-up: the first requests of a fresh code path run unoptimized (these events are stored too).
  await sendBatches(base, key, bodies.slice(0, 2), 1)
  for (const [name, from, to, concurrency] of [[INGESTION, 2, 2 + ingestBatches, INGEST_CONCURRENCY], [INGESTION_SERIAL, 2 + ingestBatches, bodies.length, 1]] as const) {
    const f = await sendBatches(base, key, bodies.slice(from, to), concurrency)
    results.figures[name] = f
    log(`  ${name}: ${f.per_second} events/s, ${f.concurrency} at a time, per batch p50 ${f.p50_ms} ms, p99 ${f.p99_ms} ms${f.non2xx ? `, ${f.non2xx} failed` : ''}`)
  }
}
