import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { once } from 'node:events'
import { request as httpRequest } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { createInterface } from 'node:readline'
import pg from 'pg'
import autocannon from 'autocannon'
import { generateKml, mulberry32 } from './generate-kml.ts'
import { CliError, defineCommand, openMigratedDatabase, runAsProgram } from '../commands/cli.ts'
import { SYNTHETIC_END, syntheticActivity } from '../lib/activity/synthetic.ts'
import { defaultPoolMax, loadConfig } from '../lib/config.ts'
import { freePort } from '../lib/free-port.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../lib/auth/api-keys.ts'
import { createApiKey } from '../db/api-keys.ts'
import { dashboardColdLoad } from '../bench/dashboard-load.ts'
import { MAP_VIEWS, mapLoadAtScale } from '../bench/map-load.ts'
import { streamFanout } from '../bench/stream-fanout.ts'
import { bboxPath, boundaryBoxes, idsDiffer, isScaleFigure, parseScale, percentile, procMemory, randomTiles, scaleLabel, targetsOfScale, tilePath, tilesPerZoomBand } from '../bench/scale.ts'
import { baseName, benchRuntimes, floorHeaders, onRuntime, peerFigure, peerTargets, peerTiming, PEERS, sideFigure, type PeerKey, type Runtime, type SideFigure } from '../bench/peers/sides.ts'

const HELP = `
Creates a throw-away PostgreSQL database, generates and imports a KML of placemarks, seeds activity
events, starts the server and drives it with autocannon (32 connections unless said otherwise).
Small answers (one placemark, stats, folders, a page of 10 placemarks, /api/auth/me) are measured
against five peers answering the same bytes from memory (bench/peers/): the floor (a bare Fastify 5
sending our very headers, taken from our server's answer and set from one object), the Fastify stack
(@fastify/helmet, cors, rate-limit and etag as their READMEs set them up), the Express stack (Express 5
with helmet, cors and express-rate-limit), a bare Fastify 5 and a bare Express 5; in alternating turns,
each figure the server process's own CPU time (user + system, from /proc) per answer, median of the
turns, beside its req/s. They are measured on the machine's Node and again on Node 24 (see --node),
every server started with that binary (the load generator stays on the machine's Node). The stats answer
to an IPv6 client is measured against the same to an IPv4 one (the server listens on :: when the machine has IPv6); the analytics routes over a 30-day window with one
connection; ingestion through POST /api/activity (with an API key) in batches of 1000 new events,
4 requests at a time, then one at a time. Every figure is judged against bench/targets.json.
Prints a table and writes bench/results.json.

options:
  --quick      the small answers against the peers (and over IPv6) only, on the sample data, in about a minute
               per Node (every server warmed on every answer, then 3 turns of 0.5 s per answer; the full
               run: 3 turns of 2 s): the check to run before a change to the request path lands
  --node PATH  a Node binary to measure the small answers on besides the machine's, repeatable; "none" for
               the machine's alone (default: Node 24 where CI keeps it, $NODE24_CACHE or
               ~/.cache/placemark-guild-api/node24, fetched by .ci/run; without it, a line says how to fetch it)
  --small      every figure at small sizes: 20,000 placemarks, 200,000 events, 3 turns of 1 s
               (default: 1,000,000 placemarks, 10,000,000 events, 5 turns of 2 s per server)
  --analytics  the guild analytics figures only: seed the events, then ghosts, the dashboard's
               overview and the seven analytics routes over a 30-day window, what the dashboard
               page ships (JS + CSS, gzipped) and its cold load in Chromium (a new browser context,
               signed in, to the overview drawn, of the guild with the most events), ingestion through
               POST /api/activity, and stream fan-out: 1,000 event streams of one guild open on one server
               (a second one, over the same database, whose 200 users sign in through a stand-in identity
               provider), 10 batches posted, the time from each POST to its message read on every stream
               (no placemarks, no peers); with --small, at the small sizes (the fan-out keeps its 1,000 streams)
  --events N   seed N activity events instead of the size's default (10,000,000, or 200,000 with
               --small); the figures then say how many there were
  --overhead   the per-piece cost table instead (bench/overhead.ts): server CPU per request with
               each piece of the request path on alone, all together, and the whole app
  --scale S    the placemark figures at scale instead, against a PostGIS peer: S is 1m or 10m
               (1,000,000 or 10,000,000 placemarks). Generates the KML in a temporary directory,
               times our import (node --import ./scripts/typescript.mjs scripts/import.ts, as npm run import runs it) and
               GDAL's ogr2ogr (KML driver) loading the same file into a PostGIS table (wall time and
               peak RSS of each, from /proc), starts our server in production (default settings)
               and times start to /health/ready, waits for the box index (its state from /health or
               /metrics) and takes the server's RSS, starts a second server with BBOX_INDEX_MB=0 (the
               database path) and the peer (bench/peers/postgis.ts: Fastify + pg, && and
               ST_Intersects), checks that all three give the same placemarks on 18 random city
               boxes and 4 boundary cases, then loads random city boxes in alternating turns (32
               connections): req/s, p50, p99, ratio to the peer. Then vector tiles on both of our
               servers, one after the other: the tiles of 2,000 random placemarks (seed 11), each at a
               random zoom from 0 to 16 and at zooms 0 to 3 (some 830 tiles, all holding data), at 32
               connections from one address, each tile asked once (cold: not yet asked of that
               process, every one computed), then the same tiles round and round for 10 s (cached:
               the dataset cache's bytes): p50, p99 and tiles/s or req/s of each, and the server's RSS
               before and after them (the memory the tiles add). Last, the map page in Chromium
               (bench/map-load.ts) on the box index's server: its first view, the whole dataset, must
               draw every point once in its clusters and lone points, then a city zoom by zoom (6, 9,
               12.5, 15) and a pan, each timed to every tile drawn, with no console error. Without
               PostGIS or ogr2ogr the peer is skipped with a line saying what to install. About 5
               minutes for 1m on 2 cores without the peer (the tiles 1.5 of them, the map half of one); 10m takes some 14 GB of memory in ogr2ogr's
               KML driver (1.4 GB at 1m) and about 3 GB of disk for the KML alone
  --placemarks N  with --scale (or alone), N placemarks instead of the scale's count: a dry run
               at 100000 takes about a minute and a half (targets are judged at 1M and 10M only)
  --keep       keep the database afterwards (default: drop it; with --scale, both databases)
  -h, --help   show this help and exit

settings (from the environment, or from .env in the current directory; the environment wins):
  BENCH_DATABASE_URL   PostgreSQL server to create the database on
                       (default: postgres://postgres@127.0.0.1:5432/postgres)
`

// Options first, before anything is created: a mistyped option costs one line and exit 2.
export const command = defineCommand({ usage: 'npm run bench -- [--quick | --small | --analytics | --overhead | --scale 1m|10m] [--node PATH] [--events N] [--placemarks N] [--keep]', help: HELP }, {
  options: {
    quick: { type: 'boolean', default: false },
    small: { type: 'boolean', default: false },
    analytics: { type: 'boolean', default: false },
    events: { type: 'string' },
    overhead: { type: 'boolean', default: false },
    scale: { type: 'string' },
    placemarks: { type: 'string' },
    keep: { type: 'boolean', default: false },
    node: { type: 'string', multiple: true }
  }
}, async ({ values }, io) => {
  if (values.quick && values.analytics) throw new CliError('--quick and --analytics exclude each other (see --help)', 2)
  let scale: number | null = null
  if (values.scale !== undefined) {
    scale = parseScale(values.scale)
    if (scale === null || !['1m', '10m'].includes(values.scale.toLowerCase())) throw new CliError('--scale must be 1m or 10m (see --help; --placemarks N for another count)', 2)
  }
  if (values.placemarks !== undefined) {
    scale = Number(values.placemarks)
    if (!/^\d+$/.test(values.placemarks) || scale < 1000 || scale > 100_000_000) throw new CliError('--placemarks must be an integer from 1000 to 100000000 (see --help)', 2)
  }
  if (scale !== null && (values.quick || values.small || values.analytics || values.overhead || values.events !== undefined)) {
    throw new CliError('--scale and --placemarks go alone (with --keep): not with --quick, --small, --analytics, --overhead or --events (see --help)', 2)
  }
  let events: number | null = null
  if (values.events !== undefined) {
    events = Number(values.events)
    if (!/^\d+$/.test(values.events) || events < 1 || events > 1_000_000_000) throw new CliError('--events must be an integer from 1 to 1000000000 (see --help)', 2)
  }
  cli = { quick: values.quick ?? false, small: values.small ?? false, analytics: values.analytics ?? false, events, keep: values.keep ?? false, nodes: values.node }
  adminUrl = io.env.BENCH_DATABASE_URL ?? adminUrl
  if (values.overhead) {
    const child = spawn(process.execPath, ['--import', LOADER, join(root, 'bench', 'overhead.ts')], { cwd: root, stdio: 'inherit' })
    const [code] = await once(child, 'exit') as [number | null]
    if (code !== 0) throw new CliError(`bench/overhead.ts failed (exit ${code})`)
    return
  }
  if (scale !== null) {
    await mainScale(scale)
    return
  }
  await main()
})

let cli: { quick: boolean; small: boolean; analytics: boolean; events: number | null; keep: boolean; nodes?: string[] } = { quick: false, small: false, analytics: false, events: null, keep: false }
// --quick measures the peers' figures only; its turns are the small run's.
const small = () => cli.quick || cli.small
const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
// Every process runs the TypeScript sources as `npm start` and the other npm scripts do (scripts/typescript.mjs).
const LOADER = './scripts/typescript.mjs'
const sizes = () => ({
  placemarks: small() ? 20_000 : 1_000_000,
  events: cli.events ?? (small() ? 200_000 : 10_000_000),
  users: small() ? 2_000 : 100_000,
  // Ingestion through the API: batches sent 4 at a time, then batches sent one at a time.
  ingestBatches: small() ? 20 : 200,
  serialBatches: small() ? 10 : 50
})
const GUILDS = 100
const BATCH = 1000
const INGEST_CONCURRENCY = 4
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
const ANALYTICS_FIGURES = ['activity seed', 'ghosts (one guild, 1 connection)', 'ghosts (one guild, 32 connections)',
  ...ANALYTICS_ROUTES.map((name) => `${name} (one guild, 30 days, 1 connection)`), DASHBOARD_SHIPPED, DASHBOARD_COLD, INGESTION, INGESTION_SERIAL, STREAM_FANOUT]
const CONNECTIONS = 32
let adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres'
// Short alternating turns, so that a slow spell of the shared machine (seconds long) falls on every server.
const timing = () => small()
  ? { duration: 3, warmup: 1, turns: 3, turnSeconds: 1 }
  : { duration: 10, warmup: 3, turns: 5, turnSeconds: 2 }

// The small answers measured against the peers, by figure name (the names of bench/targets.json).
const PEER_FIGURES: { name: string; path: string; auth?: boolean }[] = [
  { name: 'one placemark', path: '/api/v1/placemarks/1' },
  { name: 'stats', path: '/api/v1/stats' },
  { name: 'folders', path: '/api/v1/folders' },
  { name: 'placemarks page (10)', path: '/api/v1/placemarks?limit=10' },
  { name: 'auth/me', path: '/api/auth/me', auth: true }
]

type Figure = Record<string, number | string>
interface Check { figure: string; target: string; pass: boolean }
// A server under load; with its pid, its CPU time is read around each of its turns.
interface Side { name: string; base: string; pid?: number }
interface Answer { url: string; contentType: string; bodyBase64: string; headers: Record<string, string | string[]> }

const results = {
  quick: false,
  machine: `${process.platform} ${process.arch}, node ${process.version}`,
  // The Node versions the small answers were measured on (their figures' names say which).
  runtimes: [] as string[],
  at: new Date().toISOString(),
  settings: {} as Record<string, number>,
  figures: {} as Record<string, Figure>,
  checks: [] as Check[]
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round2 = (x: number) => Math.round(x * 100) / 100

// The children of a run that cleans up after itself (--scale): none is started once it has stopped.
interface Tracker { children: Set<ChildProcess>; stopped: boolean }

function tracked<C extends ChildProcess> (track: Tracker | undefined, child: C): C {
  if (!track) return child
  track.children.add(child)
  child.once('exit', () => track.children.delete(child))
  return child
}

function run (cmd: string, args: string[], env: Record<string, string>, onStderr?: (text: string) => void, track?: Tracker): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  const started = performance.now()
  if (track?.stopped) return Promise.reject(new Error('interrupted'))
  return new Promise((resolve) => {
    const done = resolve
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    tracked(track, child)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d; onStderr?.(String(d)) })
    // A command that is not installed: no exit code, the reason in stderr.
    child.on('error', (err) => done({ code: null, stdout, stderr: stderr + err.message, seconds: (performance.now() - started) / 1000 }))
    child.on('close', (code) => done({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 }))
  })
}

// Starts a Node child and waits for the stdout line that says it is ready; returns what `ready` took from it.
async function startProcess (args: string[], ready: (line: string) => string | null, node = process.execPath): Promise<{ child: ChildProcess; value: string }> {
  const child = spawn(node, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout! })
  for await (const line of lines) {
    const value = ready(line)
    if (value) {
      lines.on('line', () => {})
      return { child, value }
    }
  }
  throw new Error(`process ${args.join(' ')} exited before it was ready`)
}

async function stop (child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

async function load (url: string, opts: { requests?: autocannon.Request[]; headers?: Record<string, string>; connections?: number; duration?: number } = {}) {
  // Sampled every 100 ms: autocannon stops at the first sample after the duration, so a half-second turn
  // lasts half a second, not a whole one (the figures are over its actual length).
  const r = await autocannon({ url, connections: opts.connections ?? CONNECTIONS, duration: opts.duration ?? timing().duration, headers: opts.headers, requests: opts.requests, sampleInt: 100 })
  // Requests over the run's actual length: autocannon's average is over whole-second samples.
  return { requests: r.requests.total, seconds: r.duration, rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors + r.timeouts }
}

// A GET with autocannon's headers (no accept-encoding), so the bytes kept are the bytes the load gets.
function getBytes (url: string, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string; body: Buffer; rawHeaders: string[] }> {
  return new Promise((resolve, reject) => {
    const [done, fail] = [resolve, reject]
    httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => done({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks), rawHeaders: res.rawHeaders }))
    }).on('error', fail).end()
  })
}

// The exact answers of our (warmed) server that the peers will serve, with the headers the floor sends.
async function fetchAnswers (base: string, token: string | null): Promise<Answer[]> {
  const answers: Answer[] = []
  for (const { path, auth } of PEER_FIGURES) {
    if (auth && !token) continue
    const res = await getBytes(base + path, auth ? { authorization: `Bearer ${token}` } : {})
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`)
    answers.push({ url: path, contentType: res.contentType, bodyBase64: res.body.toString('base64'), headers: floorHeaders(res.rawHeaders) })
  }
  return answers
}

async function startPeer (name: string, answersFile: string, node = process.execPath): Promise<Side & { child: ChildProcess }> {
  const { child, value } = await startProcess(['--import', LOADER, `bench/peers/${name}.ts`, answersFile], (line) => (/^\d+$/.test(line.trim()) ? line.trim() : null), node)
  return { name, base: `http://127.0.0.1:${value}`, child, pid: child.pid }
}

// The comparison is fair only if a peer answers the very status, content-type and bytes ours did (the
// floor: and every header).
async function checkSameBytes (peer: Side, answers: Answer[], allHeaders = false) {
  for (const a of answers) {
    const res = await getBytes(peer.base + a.url)
    if (res.status !== 200 || res.contentType !== a.contentType || res.body.toString('base64') !== a.bodyBase64) throw new Error(`the ${peer.name} peer answers ${a.url} differently from our server`)
    if (allHeaders && JSON.stringify(floorHeaders(res.rawHeaders)) !== JSON.stringify(a.headers)) throw new Error(`the ${peer.name} peer sends other headers than our server for ${a.url}`)
  }
}

/**
 * Measures one URL on every side in alternating short turns, the first side rotating each round, so that
 * a slow spell of the shared machine weighs on all alike; a side's rate is its requests over its seconds,
 * and (a side with a pid) its CPU µs per answer the median of its turns' (see sideFigure).
 */
async function alternate (sides: Side[], path: string, headers?: Record<string, string>, turns: { warmup: number; turns: number; turnSeconds: number } = timing()) {
  // Warm up each side first: the first seconds of a fresh code path run unoptimized.
  for (const side of sides) await load(side.base + path, { headers, duration: turns.warmup })
  const samples = sides.map(() => [] as { cpuSeconds: number; requests: number; seconds: number; p99: number; non2xx: number }[])
  for (let turn = 0; turn < turns.turns; turn++) {
    for (let k = 0; k < sides.length; k++) {
      const i = (turn + k) % sides.length
      const pid = sides[i].pid
      const before = pid ? cpuSeconds(pid) : null
      const r = await load(sides[i].base + path, { headers, duration: turns.turnSeconds })
      const after = pid ? cpuSeconds(pid) : null
      samples[i].push({ cpuSeconds: before !== null && after !== null ? after - before : NaN, requests: r.requests, seconds: r.seconds, p99: r.p99, non2xx: r.non2xx })
    }
  }
  return samples.map(sideFigure)
}

// The same small answer to an IPv6 client and to an IPv4 one, alternated: what the address's family costs.
const IPV6_FIGURE = 'stats, IPv6 client'
async function measureIpv6 (base: string, ipv6Base: string) {
  const path = '/api/v1/stats'
  const [v4, v6] = await alternate([{ name: 'IPv4', base }, { name: 'IPv6', base: ipv6Base }], path)
  results.figures[IPV6_FIGURE] = { url: path, rps: Math.round(v6.rps), ipv4_rps: Math.round(v4.rps), vs_ipv4: round2(v6.rps / v4.rps), p99_ms: v6.p99, non2xx: v6.non2xx + v4.non2xx }
  log(`  ${IPV6_FIGURE}: ${Math.round(v6.rps)} req/s, over IPv4 ${Math.round(v4.rps)}`)
}

/**
 * The small answers on one runtime: our server (started with that Node) against the five peers (started
 * with it too) answering its very bytes, one URL after the other; one server under load at a time.
 */
async function measureAgainstPeers (runtime: Runtime, ours: Side, token: string | null) {
  log(`load: small answers on ${runtime.label} (${runtime.version}), ours against the floor, the Fastify and Express stacks, bare Fastify and bare Express, serving the same bytes`)
  const answers = await fetchAnswers(ours.base, token)
  const answersFile = join(root, 'bench', 'data', `peer-answers-${runtime.label.replace(/\W+/g, '')}.json`)
  // A fresh checkout has no bench/data yet (the quick run imports nothing).
  mkdirSync(dirname(answersFile), { recursive: true })
  writeFileSync(answersFile, JSON.stringify(answers))
  const peers: (Side & { child: ChildProcess })[] = []
  try {
    for (const peer of PEERS) peers.push(await startPeer(peer.file, answersFile, runtime.node))
    for (const [i, peer] of peers.entries()) await checkSameBytes(peer, answers, PEERS[i].key === 'floor')
    const { warmup, rewarm, turns, turnSeconds } = peerTiming(cli.quick)
    const figures = PEER_FIGURES.filter((f) => !f.auth || token).map((f) => ({ ...f, headers: f.auth ? { authorization: `Bearer ${token}` } : undefined }))
    // First every server on every answer: V8 optimizes the shared request path in threads of the server's
    // own process, whose CPU would otherwise fall on the first figure's turns.
    for (const side of [ours, ...peers]) for (const { path, headers } of figures) await load(side.base + path, { headers, duration: warmup })
    for (const { name, path, headers } of figures) {
      const [our, ...theirs] = await alternate([ours, ...peers], path, headers, { warmup: rewarm, turns, turnSeconds })
      if (theirs.some((p) => p.non2xx)) throw new Error(`a peer gave non-2xx answers for ${path}: its figure would mean nothing`)
      const answer = answers.find((a) => a.url === path)!
      const figure = peerFigure(our, Object.fromEntries(PEERS.map((p, i) => [p.key, theirs[i]])) as Record<PeerKey, SideFigure>,
        { node: runtime.version, url: path, bytes: Buffer.from(answer.bodyBase64, 'base64').length, headers: Object.keys(answer.headers).length })
      results.figures[onRuntime(name, runtime.label)] = figure
      log(`  ${name}: ours ${figure.us} µs per answer (${figure.rps} req/s); ${PEERS.map((p) => `${p.label} ${figure[`${p.key}_us`]}`).join(', ')}`)
    }
  } finally {
    // The peers are done: they take no memory or CPU from the rest.
    await Promise.all(peers.map((p) => stop(p.child)))
  }
}

function record (name: string, r: Awaited<ReturnType<typeof load>>) {
  results.figures[name] = { rps: Math.round(r.rps), p50_ms: r.p50, p99_ms: r.p99, non2xx: r.non2xx }
  log(`  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`)
}

// CPU seconds a process has used so far (Linux), or null where /proc is not there.
function cpuSeconds (pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

// Resident and peak memory of a process in MB (Linux), from /proc.
function memoryMb (pid: number): { rss_mb: number; peak_rss_mb: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
    return { rss_mb: Math.round(kb('VmRSS') / 1024), peak_rss_mb: Math.round(kb('VmHWM') / 1024) }
  } catch {
    return null
  }
}

// The server loads its box index in the background after start: wait until it is idle (under 5% of a
// core over a second), so that no measurement shares the machine with that load.
async function settle (pid: number) {
  const started = Date.now()
  let last = cpuSeconds(pid)
  while (last !== null && Date.now() - started < 300_000) {
    await sleep(1000)
    const now = cpuSeconds(pid)
    if (now === null || now - last < 0.05) return
    last = now
  }
}

// Autovacuum after the bulk loads would take a core from the measurements: wait until it is done.
async function quiesce (admin: pg.Client, dbName: string) {
  const started = Date.now()
  while (Date.now() - started < 300_000) {
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND (backend_type = \'autovacuum worker\' OR query ILIKE \'vacuum%\' OR query ILIKE \'analyze%\')', [dbName])
    if (rows[0].n === 0) return
    await sleep(1000)
  }
  log('  autovacuum still running after 5 minutes; measuring anyway')
}

async function importPlacemarks (DATABASE_URL: string) {
  const dataDir = join(root, 'bench', 'data')
  mkdirSync(dataDir, { recursive: true })
  const kml = join(dataDir, `placemarks-${sizes().placemarks}.kml`)
  // Generated once per size: the file is the same every run.
  if (!existsSync(kml)) {
    log(`generating ${sizes().placemarks} placemarks → ${kml}`)
    await generateKml(kml, sizes().placemarks, 1)
  }
  log(`importing ${kml}`)
  const imp = await run(process.execPath, ['--import', LOADER, 'scripts/import.ts', kml, '--timezone', 'America/Los_Angeles'], { DATABASE_URL })
  if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
  const m = /in ([\d.]+) s[\s\S]*peak RSS (\d+) MB/.exec(imp.stdout)
  const seconds = m ? Number(m[1]) : imp.seconds
  results.figures.import = { placemarks: sizes().placemarks, seconds, per_second: Math.round(sizes().placemarks / seconds), peak_rss_mb: m ? Number(m[2]) : -1, wall_seconds: Math.round(imp.seconds * 10) / 10 }
  log(`  ${results.figures.import.per_second} placemarks/s, peak RSS ${results.figures.import.peak_rss_mb} MB`)
}

// --quick: the project's own sample KML, enough for the small answers.
async function importSample (DATABASE_URL: string) {
  const imp = await run(process.execPath, ['--import', LOADER, 'scripts/import.ts', join(root, 'db', 'sample', 'sample.kml')], { DATABASE_URL })
  if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
}

async function seedActivity (DATABASE_URL: string) {
  log(`seeding ${sizes().events} activity events over ${GUILDS} guilds`)
  // The seed's progress lines are shown as they come: a long seed says how far it is.
  const act = await run(process.execPath, ['--import', LOADER, 'scripts/seed-activity.ts', '--guilds', String(GUILDS), '--users', String(sizes().users), '--events', String(sizes().events), '--seed', '7'], { DATABASE_URL },
    (text) => process.stderr.write(text.replace(/^(?=.)/gm, '  seed: ')))
  if (act.code !== 0) throw new Error(`activity seed failed: ${act.stderr}`)
  results.figures['activity seed'] = { events: sizes().events, guilds: GUILDS, users: sizes().users, seconds: Math.round(act.seconds * 10) / 10, per_second: Math.round(sizes().events / act.seconds) }
  log(`  ${results.figures['activity seed'].per_second} events/s (wall clock, including start-up)`)
}

// Whether this machine can listen on the IPv6 loopback (a container may have IPv6 off).
async function hasIpv6Loopback (): Promise<boolean> {
  const probe = createNetServer()
  try {
    probe.listen(0, '::1')
    await once(probe, 'listening')
    return true
  } catch {
    return false
  } finally {
    probe.close()
  }
}

// The server under test, with limits out of the way of the load generator; stderr shown so a crash is visible.
async function startServer (DATABASE_URL: string, env: Record<string, string> = {}, node = process.execPath): Promise<{ child: ChildProcess; base: string; ipv6Base: string | null }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // On :: when the machine has IPv6 (as many deployments listen): IPv4 clients then arrive mapped into IPv6.
  const ipv6 = await hasIpv6Loopback()
  const child = spawn(node, ['--import', LOADER, 'server.ts'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DATABASE_URL, PORT: String(port), HOST: ipv6 ? '::' : '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'development', RATE_LIMIT_MAX: '100000000', AUTH_RATE_LIMIT_MAX: '100000000', API_KEY_RATE_LIMIT_MAX: '100000000', SIGNIN_MAX_FAILURES: '1000000', DB_POOL_MAX: '20', JWT_SECRET: 'bench-access-secret-0123456789abcdefghijklmnop', JWT_REFRESH_SECRET: 'bench-refresh-secret-0123456789abcdefghijklmn', ...env }
  })
  for (let i = 0; i < 120; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode} before answering /health`)
    try { if ((await fetch(`${base}/health`)).ok) return { child, base, ipv6Base: ipv6 ? `http://[::1]:${port}` : null } } catch { /* not up yet */ }
    await sleep(500)
  }
  child.kill('SIGTERM')
  throw new Error('the server did not answer /health within 60 s')
}

// Unique random city-sized boxes for every request: the benchmark measures the index, not a cache.
// The same seed gives every server the same boxes in the same order.
function cityBoxPaths (): string[] {
  const rand = mulberry32(42)
  const cities: [number, number][] = [[-115.17, 36.11], [-118.24, 34.05], [-74.0, 40.71], [-0.12, 51.5], [2.35, 48.86], [139.69, 35.69]]
  return Array.from({ length: 200_000 }, () => {
    const [lon, lat] = cities[Math.floor(rand() * cities.length)]
    const x = lon + (rand() - 0.5) * 0.5
    const y = lat + (rand() - 0.5) * 0.5
    return `/api/v1/spatial/bbox?min_lon=${(x - 0.02).toFixed(4)}&min_lat=${(y - 0.02).toFixed(4)}&max_lon=${(x + 0.02).toFixed(4)}&max_lat=${(y + 0.02).toFixed(4)}&limit=100`
  })
}

// Requests that take the boxes one after the other, each list of requests from the first box.
function randomBoxes (boxes: string[] = cityBoxPaths()): autocannon.Request[] {
  let next = 0
  return [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: boxes[next++ % boxes.length] }) }]
}

// Ghosts and the seven analytics routes of one guild, then ingestion through the API.
async function measureAnalytics (DATABASE_URL: string, base: string, token: string | null) {
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

async function main () {
  results.quick = cli.quick
  const { duration, warmup, turns, turnSeconds } = timing()
  results.settings = { connections: CONNECTIONS, duration_s: duration, warmup_s: warmup, turns, turn_s: turnSeconds }
  if (!cli.quick) Object.assign(results.settings, { events: sizes().events, guilds: GUILDS, users: sizes().users, ingest_batch: BATCH, ingest_concurrency: INGEST_CONCURRENCY })
  // The Node binaries of the small answers (none with --analytics, which measures none).
  const { runtimes, skipped } = cli.analytics ? { runtimes: [], skipped: [] } : benchRuntimes(cli.nodes, process.env)
  for (const why of skipped) log(`small answers: ${why}`)
  results.runtimes = runtimes.map((r) => r.version)
  if (!cli.analytics) {
    const peers = peerTiming(cli.quick)
    Object.assign(results.settings, { peer_warmup_s: peers.warmup, peer_rewarm_s: peers.rewarm, peer_turns: peers.turns, peer_turn_s: peers.turnSeconds })
  }
  const dbName = `bench_${Date.now().toString(36)}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${dbName}`)
  const dbUrl = new URL(adminUrl)
  dbUrl.pathname = `/${dbName}`
  const DATABASE_URL = dbUrl.toString()
  const children: ChildProcess[] = []
  try {
    if (cli.quick) await importSample(DATABASE_URL)
    else if (cli.analytics) {
      // Only the activity: migrated (the seed migrates), then seeded.
      await seedActivity(DATABASE_URL)
    } else {
      await importPlacemarks(DATABASE_URL)
      await seedActivity(DATABASE_URL)
    }

    // Vacuum now: an autovacuum of the events starting in the middle of a measurement would take a core.
    const vacuum = new pg.Client({ connectionString: DATABASE_URL })
    await vacuum.connect()
    await vacuum.query('VACUUM (ANALYZE)').finally(() => vacuum.end())

    const server = await startServer(DATABASE_URL)
    children.push(server.child)
    await quiesce(admin, dbName)
    if (server.child.pid) await settle(server.child.pid)
    const token = await signIn(server.base).catch((err: Error) => { log(`  sign-in for the auth benchmarks failed: ${err.message}`); return null })
    if (cli.analytics) {
      // --analytics: the activity figures alone, without the placemarks and the peers.
      await measureAnalytics(DATABASE_URL, server.base, token)
      const memory = server.child.pid ? memoryMb(server.child.pid) : null
      if (memory) results.figures['server memory'] = memory
    } else {
      // The small answers on the machine's Node (this server), then on each other Node (a server of its
      // own): one that fails there is said in a line, and its figures' targets fail as not measured.
      for (const [i, runtime] of runtimes.entries()) {
        if (i === 0) {
          await measureAgainstPeers(runtime, { name: 'ours', base: server.base, pid: server.child.pid }, token)
          continue
        }
        let other: Awaited<ReturnType<typeof startServer>> | null = null
        try {
          other = await startServer(DATABASE_URL, {}, runtime.node)
          if (other.child.pid) await settle(other.child.pid)
          await measureAgainstPeers(runtime, { name: 'ours', base: other.base, pid: other.child.pid }, token)
        } catch (err) {
          log(`  small answers on ${runtime.label} not measured: ${(err as Error).message}`)
        } finally {
          if (other) await stop(other.child)
        }
      }
      if (server.ipv6Base) await measureIpv6(server.base, server.ipv6Base)
      else log(`  ${IPV6_FIGURE}: not measured, this machine has no IPv6 loopback`)
      // --quick stops here: the small answers are its whole point.
      if (!cli.quick) {
        log('load: bbox, random city boxes')
        const boxes = randomBoxes()
        await load(server.base, { requests: boxes, duration: timing().warmup })
        record('bbox (random city boxes, 1 connection)', await load(server.base, { requests: boxes, connections: 1 }))
        record('bbox (random city boxes, 32 connections)', await load(server.base, { requests: boxes }))
        const memory = server.child.pid ? memoryMb(server.child.pid) : null
        if (memory) results.figures['server memory'] = memory

        await measureAnalytics(DATABASE_URL, server.base, token)
      }
    }
  } finally {
    await Promise.all(children.map(stop))
    if (!cli.keep) await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {})
    else log(`kept the database ${dbName}`)
    await admin.end()
  }

  const targets = JSON.parse(readFileSync(join(root, 'bench', 'targets.json'), 'utf8')) as Parameters<typeof checkTargets>[0]
  // --quick judges the figures it measured, the peers' ratios.
  if (cli.quick) for (const name of Object.keys(targets)) if (name !== IPV6_FIGURE && !PEER_FIGURES.some((f) => f.name === baseName(name))) delete targets[name]
  // The figures of --scale are judged by --scale only.
  for (const name of Object.keys(targets)) if (isScaleFigure(name)) delete targets[name]
  // --analytics judges the activity figures.
  if (cli.analytics) for (const name of Object.keys(targets)) if (!ANALYTICS_FIGURES.includes(name)) delete targets[name]
  // The peers' targets hold on every runtime measured (bench/peers/sides.ts).
  results.checks = checkTargets(peerTargets(targets, PEER_FIGURES.map((f) => f.name), runtimes.map((r) => r.label)))
  writeFileSync(join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
  printTables()
}

// ---- The bench at scale (--scale): our import, server and both box paths against a PostGIS peer ----

const INSTALL_PEER = 'apt-get install -y postgresql-15-postgis-3 gdal-bin'

interface Measured { code: number | null; stdout: string; stderr: string; seconds: number; peakRssMib: number | null }

/**
 * Runs a command to its end with its wall time and its peak RSS, read from /proc/<pid>/status (VmHWM,
 * which only grows) every 50 ms while it runs; null where /proc is not there.
 */
function runMeasured (cmd: string, args: string[], env: Record<string, string>, track: Tracker): Promise<Measured> {
  const started = performance.now()
  if (track.stopped) return Promise.reject(new Error('interrupted'))
  return new Promise((resolve) => {
    const done = resolve
    const child = tracked(track, spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }))
    let stdout = ''
    let stderr = ''
    let peak: number | null = null
    const sample = () => {
      if (!child.pid) return
      try {
        const m = procMemory(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        if (m) peak = Math.max(peak ?? 0, m.peak_rss_mib)
      } catch { /* exited, or no /proc */ }
    }
    const timer = setInterval(sample, 50)
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('error', (err) => { stderr += String(err.message) })
    child.on('close', (code) => {
      clearInterval(timer)
      done({ code, stdout, stderr, seconds: (performance.now() - started) / 1000, peakRssMib: peak })
    })
  })
}

// The production settings of a server under test: the defaults, a few required values (the identity
// provider is never called), and the rate limits out of the load generator's way.
const productionEnv = (port: number): Record<string, string> => ({
  NODE_ENV: 'production',
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  IDP_CLIENT_ID: 'bench',
  IDP_CLIENT_SECRET: 'bench',
  IDP_REDIRECT_URI: `http://127.0.0.1:${port}/api/auth/callback`,
  IDP_AUTHORIZE_URL: 'http://127.0.0.1:9/authorize',
  IDP_TOKEN_URL: 'http://127.0.0.1:9/token',
  IDP_USER_URL: 'http://127.0.0.1:9/user',
  IDP_GUILDS_URL: 'http://127.0.0.1:9/guilds',
  JWT_SECRET: 'bench-access-secret-0123456789abcdefghijklmnop',
  JWT_REFRESH_SECRET: 'bench-refresh-secret-0123456789abcdefghijklmn',
  RATE_LIMIT_MAX: '100000000',
  AUTH_RATE_LIMIT_MAX: '100000000'
})

interface Server { name: string; base: string; child: ChildProcess; readySeconds: number }

/** Starts our server in production and times spawn to the first 200 of /health/ready (polled every 20 ms). */
async function startProductionServer (name: string, DATABASE_URL: string, env: Record<string, string>, track: Tracker): Promise<Server> {
  if (track.stopped) throw new Error('interrupted')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const child = tracked(track, spawn(process.execPath, ['--import', LOADER, 'server.ts'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DATABASE_URL, ...productionEnv(port), ...env } }))
  while (performance.now() - started < 600_000) {
    if (child.exitCode !== null) throw new Error(`${name}: the server exited with code ${child.exitCode} before it was ready`)
    try { if ((await fetch(`${base}/health/ready`)).status === 200) return { name, base, child, readySeconds: (performance.now() - started) / 1000 } } catch { /* not up yet */ }
    await sleep(20)
  }
  throw new Error(`${name}: /health/ready did not answer 200 within 10 minutes`)
}

/**
 * The box index's state: from /health when it tells it (a `boxIndex` field, a state or an object
 * with one), else from the box_index_state gauge of /metrics (which answers loopback).
 */
async function boxIndexState (base: string): Promise<string> {
  try {
    const health = await (await fetch(`${base}/health`)).json() as Record<string, unknown>
    const field = health.boxIndex ?? health.box_index
    if (typeof field === 'string') return field
    if (field && typeof field === 'object' && typeof (field as { state?: unknown }).state === 'string') return (field as { state: string }).state
  } catch { /* no JSON: ask the metrics */ }
  const metrics = await (await fetch(`${base}/metrics`)).text()
  return /^box_index_state\{state="([a-z-]+)"\} 1$/m.exec(metrics)?.[1] ?? 'unknown'
}

/** Waits until the box index is no longer loading (ready, off, too-big, failed); returns the state and when. */
async function waitForBoxIndex (server: Server, started: number): Promise<{ state: string; seconds: number }> {
  for (;;) {
    const state = await boxIndexState(server.base)
    if (!['loading', 'reloading'].includes(state) || performance.now() - started > 1_800_000) return { state, seconds: (performance.now() - started) / 1000 }
    await sleep(100)
  }
}

function processMemory (child: ChildProcess): { rss_mib: number; peak_rss_mib: number } | null {
  try { return child.pid ? procMemory(readFileSync(`/proc/${child.pid}/status`, 'utf8')) : null } catch { return null }
}

// One autocannon run over the sides' own sequence of boxes, every response time kept.
function loadBoxes (base: string, requests: autocannon.Request[], duration: number, latencies: number[]): Promise<{ requests: number; seconds: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    const [done, fail] = [resolve, reject]
    const instance = autocannon({ url: base, connections: CONNECTIONS, duration, requests }, (err, r) => {
      if (err) fail(err)
      else done({ requests: r.requests.total, seconds: r.duration, non2xx: r.non2xx + r.errors + r.timeouts })
    })
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => { latencies.push(ms) })
  })
}

/**
 * Random city boxes on every side in alternating turns (the first side rotating each round), each side
 * through the same boxes in the same order; p50 and p99 over every response of its turns.
 */
async function alternateBoxes (sides: Side[]) {
  const boxes = cityBoxPaths()
  const requests = sides.map(() => randomBoxes(boxes))
  for (const [i, side] of sides.entries()) await loadBoxes(side.base, requests[i], timing().warmup, [])
  const totals = sides.map(() => ({ requests: 0, seconds: 0, non2xx: 0, latencies: [] as number[] }))
  for (let turn = 0; turn < timing().turns; turn++) {
    for (let k = 0; k < sides.length; k++) {
      const i = (turn + k) % sides.length
      const r = await loadBoxes(sides[i].base, requests[i], timing().turnSeconds, totals[i].latencies)
      totals[i].requests += r.requests
      totals[i].seconds += r.seconds
      totals[i].non2xx += r.non2xx
    }
  }
  return totals.map((t) => {
    t.latencies.sort((a, b) => a - b)
    return { rps: t.requests / t.seconds, p50_ms: round2(percentile(t.latencies, 0.5)), p99_ms: round2(percentile(t.latencies, 0.99)), non2xx: t.non2xx }
  })
}

// Random placemarks the tiles are drawn around (each gives a tile at a random zoom and its tiles at z0–z3).
const TILE_PLACEMARKS = 2000
const TILE_SEED = 11
// A cold tile on the database path can take seconds at 10M: no request is cut off by the load generator.
const TILE_TIMEOUT_S = 120

/**
 * Where random placemarks of the dataset are (the south-west corner of their bounds: a point's own
 * position, the generator's lines' and polygons' first one), drawn by id with a fixed seed: the same
 * positions every run of a size.
 */
async function tilePositions (DATABASE_URL: string, count: number): Promise<[number, number][]> {
  const client = new pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  try {
    const { rows: [range] } = await client.query<{ lo: number | null; hi: number | null }>('SELECT min(id)::int AS lo, max(id)::int AS hi FROM placemarks')
    if (range.lo === null || range.hi === null) return []
    const rand = mulberry32(TILE_SEED)
    const ids = Array.from({ length: count }, () => range.lo! + Math.floor(rand() * (range.hi! - range.lo! + 1)))
    const { rows } = await client.query<{ id: number; min_lon: number; min_lat: number }>('SELECT id, min_lon, min_lat FROM placemarks WHERE id = ANY($1::int[])', [ids])
    const byId = new Map(rows.map((r) => [r.id, [r.min_lon, r.min_lat] as [number, number]]))
    return ids.map((id) => byId.get(id)).filter((p) => p !== undefined)
  } finally {
    await client.end()
  }
}

interface TileRun { requests: number; seconds: number; rps: number; p50_ms: number; p99_ms: number; max_ms: number; empty: number; non2xx: number }

// autocannon 9 keeps every response body as a string (its queue's addBody: `body += chunk`) for
// onResponse and verifyBody, neither of which the tile loads use. Tiles at 1M run to a megabyte of
// binary: decoding each as UTF-8 took the load generator's whole core and held the cached tiles to some
// 2,300 req/s with the server 40 % busy. The tile loads keep no body (null: another autocannon, left as it is).
const bodyQueue = ((): { prototype: { addBody: (data: Buffer) => void } } | null => {
  try {
    const queue = createRequire(import.meta.url)('autocannon/lib/pipelinedRequestsQueue.js') as { prototype?: { addBody?: unknown } }
    return typeof queue.prototype?.addBody === 'function' ? queue as { prototype: { addBody: (data: Buffer) => void } } : null
  } catch {
    return null
  }
})()

async function withoutBodies<T> (run: () => Promise<T>): Promise<T> {
  if (!bodyQueue) return run()
  const addBody = bodyQueue.prototype.addBody
  bodyQueue.prototype.addBody = () => {}
  try {
    return await run()
  } finally {
    bodyQueue.prototype.addBody = addBody
  }
}

/**
 * One autocannon run over the tile paths in their order at CONNECTIONS connections, each path asked
 * once (`amount`: as many requests as paths) or round and round for `duration` seconds; every response
 * time kept. `empty`: the 204s (a tile with no feature).
 */
function loadTiles (base: string, paths: string[], run: { amount: number } | { duration: number }): Promise<TileRun> {
  const latencies: number[] = []
  let next = 0
  let empty = 0
  return withoutBodies(() => new Promise((resolve, reject) => {
    const [done, fail] = [resolve, reject]
    const requests = [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[next++ % paths.length] }) }]
    const instance = autocannon({ url: base, connections: CONNECTIONS, timeout: TILE_TIMEOUT_S, requests, ...run }, (err, r) => {
      if (err) return fail(err)
      latencies.sort((a, b) => a - b)
      done({
        requests: r.requests.total,
        seconds: r.duration,
        rps: r.requests.total / r.duration,
        p50_ms: round2(percentile(latencies, 0.5)),
        p99_ms: round2(percentile(latencies, 0.99)),
        max_ms: round2(latencies[latencies.length - 1] ?? NaN),
        empty,
        non2xx: r.non2xx + r.errors + r.timeouts
      })
    })
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      latencies.push(ms)
      if (status === 204) empty++
    })
  }))
}

/** The dataset cache's hits and misses so far (dataset_cache_requests_total of /metrics, which answers loopback). */
async function cacheCounts (base: string): Promise<{ hit: number; miss: number }> {
  const metrics = await (await fetch(`${base}/metrics`)).text()
  const count = (result: string) => Number(new RegExp(`^dataset_cache_requests_total\\{result="${result}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0)
  return { hit: count('hit'), miss: count('miss') }
}

/**
 * The tiles on one server: cold (each tile once, none asked of this process before: every one computed),
 * then cached (the same tiles round and round for the turns' total time), with the server's RSS before
 * and after and the dataset cache's hits and misses of each part.
 */
async function measureTiles (server: Server, paths: string[]) {
  const before = processMemory(server.child)
  const start = await cacheCounts(server.base)
  const cold = await loadTiles(server.base, paths, { amount: paths.length })
  const afterCold = await cacheCounts(server.base)
  const cached = await loadTiles(server.base, paths, { duration: timing().turns * timing().turnSeconds })
  const end = await cacheCounts(server.base)
  const after = processMemory(server.child)
  return {
    cold: { ...cold, cache_hits: afterCold.hit - start.hit },
    cached: { ...cached, cache_misses: end.miss - afterCold.miss },
    rssBefore: before?.rss_mib ?? NaN,
    rssAfter: after?.rss_mib ?? NaN,
    peak: after?.peak_rss_mib ?? NaN
  }
}

interface OurAnswer { placemarks: { id: number; geometry: string }[] }
interface PeerAnswer { features: { properties: { id: number } }[] }

/**
 * Before any timing: the 18 first random city boxes and the 4 boundary cases give the same bytes on
 * both of our paths, and the same placemarks (ids, in document order: ogr2ogr numbers the features
 * from 1 in the document's order, as our import does) from the peer. Returns how many were compared.
 */
async function checkSameAnswers (index: Side, database: Side, peer: Side | null, total: number): Promise<{ boxes: number; placemarks: number }> {
  const paths = cityBoxPaths().slice(0, 18)
  // The first point placemark of the document: the boundary box's west edge goes exactly through it.
  const first = await getBytes(index.base + bboxPath({ min_lon: -180, min_lat: -90, max_lon: 180, max_lat: 90, limit: 100 }))
  const point = (JSON.parse(first.body.toString()) as OurAnswer).placemarks.map((p) => JSON.parse(p.geometry) as { type: string; coordinates: number[] }).find((g) => g.type === 'Point')
  if (!point) throw new Error('no point placemark among the first 100: the boundary case needs one')
  const cases = [...paths.map((path) => ({ name: path, path })), ...boundaryBoxes([String(point.coordinates[0]), String(point.coordinates[1])]).map((b) => ({ name: b.name, path: bboxPath(b.box) }))]
  let placemarks = 0
  for (const { name, path } of cases) {
    const ours = await getBytes(index.base + path)
    const db = await getBytes(database.base + path)
    if (ours.status !== 200 || db.status !== 200) throw new Error(`${name}: our server answered ${ours.status} with the index, ${db.status} on the database path`)
    if (!ours.body.equals(db.body)) throw new Error(`${name}: the database path's answer differs from the index's (${path})`)
    const ids = (JSON.parse(ours.body.toString()) as OurAnswer).placemarks.map((p) => p.id)
    if (name === 'west edge on a point' && ids.length === 0) throw new Error(`${name}: the point on the box's edge is not in the answer (${path})`)
    if (name === 'the whole world' && ids.length !== Math.min(10000, total)) throw new Error(`${name}: ${ids.length} placemarks, not the limit`)
    placemarks += ids.length
    if (!peer) continue
    const theirs = await getBytes(peer.base + path)
    if (theirs.status !== 200) throw new Error(`${name}: the PostGIS peer answered ${theirs.status}`)
    const difference = idsDiffer(ids, (JSON.parse(theirs.body.toString()) as PeerAnswer).features.map((f) => f.properties.id))
    if (difference) throw new Error(`${name}: the PostGIS peer's placemarks differ from ours at ${difference} (${path})`)
  }
  return { boxes: cases.length, placemarks }
}

/** Why the PostGIS peer cannot run here, or null when ogr2ogr (with its KML driver) and the extension are there. */
async function peerMissing (peerUrl: string): Promise<string | null> {
  const gdal = await run('ogr2ogr', ['--version'], {})
  if (gdal.code !== 0) return 'GDAL\'s ogr2ogr is not installed'
  const formats = await run('ogrinfo', ['--formats'], {})
  if (!/^\s*KML -vector-/m.test(formats.stdout)) return 'GDAL has no KML driver'
  const client = new pg.Client({ connectionString: peerUrl })
  try {
    await client.connect()
    await client.query('CREATE EXTENSION IF NOT EXISTS postgis')
    return null
  } catch (err) {
    return `CREATE EXTENSION postgis failed (${(err as Error).message})`
  } finally {
    await client.end().catch(() => {})
  }
}

async function mainScale (placemarks: number) {
  const label = scaleLabel(placemarks)
  const { duration, warmup, turns, turnSeconds } = timing()
  // The machine's load average (1 minute) at the start and the end: on a shared machine, what else ran.
  results.settings = { placemarks, connections: CONNECTIONS, warmup_s: warmup, turns, turn_s: turnSeconds, duration_s: duration, db_pool_max: defaultPoolMax(), load_average_start: round2(loadavg()[0]) }
  const stamp = Date.now().toString(36)
  const dbName = `bench_${stamp}`
  const peerDbName = `bench_${stamp}_postgis`
  const urlOf = (name: string) => {
    const u = new URL(adminUrl)
    u.pathname = `/${name}`
    return u.toString()
  }
  const DATABASE_URL = urlOf(dbName)
  const PEER_URL = urlOf(peerDbName)
  const dir = mkdtempSync(join(tmpdir(), 'placemark-bench-'))
  const track: Tracker = { children: new Set(), stopped: false }
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  let cleaned: Promise<void> | null = null
  const cleanup = () => {
    track.stopped = true
    cleaned ??= (async () => {
      const running = [...track.children].filter((c) => c.exitCode === null && c.signalCode === null)
      for (const child of running) child.kill('SIGTERM')
      await Promise.all(running.map((c) => once(c, 'exit')))
      rmSync(dir, { recursive: true, force: true })
      if (!cli.keep) {
        for (const name of [dbName, peerDbName]) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((err: Error) => log(`  could not drop ${name}: ${err.message}`))
      } else log(`kept the databases ${dbName} and ${peerDbName}`)
      await admin.end().catch(() => {})
    })()
    return cleaned
  }
  // Ctrl-C or a kill: the children stop, the databases and the KML go, then exit.
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: cleaning up`)
    cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const f = (name: string) => `${name} (${label})`
  try {
    await admin.query(`CREATE DATABASE ${dbName}`)
    await admin.query(`CREATE DATABASE ${peerDbName}`)
    const kml = join(dir, `placemarks-${placemarks}.kml`)
    log(`generating ${placemarks} placemarks → ${kml}`)
    const generated = performance.now()
    await generateKml(kml, placemarks, 1)
    results.figures[f('generated KML')] = { placemarks, mib: Math.round(statSync(kml).size / 1048576), seconds: round2((performance.now() - generated) / 1000) }

    // Migrated first: the import's figure is the import alone.
    const migrate = await run(process.execPath, ['--import', LOADER, 'scripts/migrate.ts'], { DATABASE_URL }, undefined, track)
    if (migrate.code !== 0) throw new Error(`migrate failed: ${migrate.stderr}`)
    log('importing with npm run import\'s command')
    const imp = await runMeasured(process.execPath, ['--import', LOADER, 'scripts/import.ts', kml, '--timezone', 'America/Los_Angeles'], { DATABASE_URL }, track)
    if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
    const importFigure: Figure = { placemarks, seconds: round2(imp.seconds), per_second: Math.round(placemarks / imp.seconds), peak_rss_mib: imp.peakRssMib ?? NaN }
    results.figures[f('import')] = importFigure
    log(`  ${importFigure.seconds} s, peak RSS ${importFigure.peak_rss_mib} MiB`)

    const missing = await peerMissing(PEER_URL)
    if (missing) log(`PostGIS peer skipped: ${missing}. Install it with: ${INSTALL_PEER} (the figures against the peer are not measured)`)
    else {
      log('loading the same KML with ogr2ogr (KML driver) into PostGIS')
      const u = new URL(adminUrl)
      // PG* variables carry the connection: no password on the command line.
      const pgEnv: Record<string, string> = { PGHOST: u.hostname, PGPORT: u.port || '5432', PGUSER: decodeURIComponent(u.username), PGDATABASE: peerDbName }
      if (u.password) pgEnv.PGPASSWORD = decodeURIComponent(u.password)
      // Every folder of the KML is a layer of the KML driver: all are appended to one table, whose
      // id (the FID) numbers the features from 1 in the document's order. COPY, as GDAL advises for loads.
      const ogr = await runMeasured('ogr2ogr', ['--config', 'GDAL_SKIP', 'LIBKML', '--config', 'PG_USE_COPY', 'YES', '-f', 'PostgreSQL', `PG:dbname=${peerDbName}`, kml,
        '-nln', 'placemarks', '-append', '-nlt', 'GEOMETRY', '-dim', 'XY', '-lco', 'GEOMETRY_NAME=geom', '-lco', 'FID=id'], pgEnv, track)
      if (ogr.code !== 0) throw new Error(`ogr2ogr failed: ${ogr.stderr.split('\n').filter((l) => !/being appended to|^\s*$|Layer creation options ignored/.test(l)).join('\n')}`)
      Object.assign(importFigure, { ogr2ogr_seconds: round2(ogr.seconds), ogr2ogr_peak_rss_mib: ogr.peakRssMib ?? NaN, vs_ogr2ogr: round2(ogr.seconds / imp.seconds) })
      log(`  ogr2ogr ${round2(ogr.seconds)} s, peak RSS ${ogr.peakRssMib} MiB`)
    }

    // Vacuumed and analyzed: an autovacuum starting in the middle of a measurement would take a core.
    for (const url of missing ? [DATABASE_URL] : [DATABASE_URL, PEER_URL]) {
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      await c.query('VACUUM (ANALYZE)').finally(() => c.end())
    }
    await quiesce(admin, dbName)
    if (!missing) await quiesce(admin, peerDbName)
    const size = async (name: string) => Math.round(Number((await admin.query('SELECT pg_database_size($1) AS bytes', [name])).rows[0].bytes) / 1048576)
    importFigure.database_mib = await size(dbName)
    if (!missing) importFigure.ogr2ogr_database_mib = await size(peerDbName)

    log('starting our server (production settings) with the box index')
    const started = performance.now()
    const index = await startProductionServer('ours, box index', DATABASE_URL, {}, track)
    const loaded = await waitForBoxIndex(index, started)
    if (index.child.pid) await settle(index.child.pid)
    const indexMemory = processMemory(index.child)
    log(`  ready in ${round2(index.readySeconds)} s; box index ${loaded.state} after ${round2(loaded.seconds)} s; RSS ${indexMemory?.rss_mib} MiB`)
    log('starting our server with BBOX_INDEX_MB=0 (the database path)')
    const database = await startProductionServer('ours, database path', DATABASE_URL, { BBOX_INDEX_MB: '0' }, track)
    if (database.child.pid) await settle(database.child.pid)
    let peer: (Side & { child: ChildProcess; readySeconds: number }) | null = null
    if (!missing) {
      if (track.stopped) throw new Error('interrupted')
      const peerStarted = performance.now()
      const { child, value } = await startProcess(['--import', LOADER, 'bench/peers/postgis.ts', PEER_URL, String(defaultPoolMax())], (line) => (/^\d+$/.test(line.trim()) ? line.trim() : null))
      tracked(track, child)
      peer = { name: 'PostGIS peer', base: `http://127.0.0.1:${value}`, child, readySeconds: (performance.now() - peerStarted) / 1000 }
    }
    results.figures[f('start to ready')] = { seconds: round2(index.readySeconds), box_index: loaded.state, box_index_seconds: round2(loaded.seconds), database_path_seconds: round2(database.readySeconds), ...(peer ? { peer_seconds: round2(peer.readySeconds) } : {}) }

    log(`checking the answers: 18 random city boxes and 4 boundary cases on both of our paths${peer ? ' and the peer' : ''}`)
    const compared = await checkSameAnswers(index, database, peer, placemarks)
    results.figures[f('answers compared')] = { boxes: compared.boxes, placemarks: compared.placemarks, with_peer: peer ? 'yes' : 'no (skipped)' }
    log(`  the same placemarks in ${compared.boxes} boxes (${compared.placemarks} placemarks)`)

    log(`load: random city boxes, ${CONNECTIONS} connections, ${turns} alternating turns of ${turnSeconds} s per server`)
    const sides: Side[] = [index, database, ...(peer ? [peer] : [])]
    const [withIndex, onDatabase, onPeer] = await alternateBoxes(sides)
    const ratio = (x: number) => (onPeer ? round2(x / onPeer.rps) : NaN)
    results.figures[f('bbox, box index')] = { rps: Math.round(withIndex.rps), p50_ms: withIndex.p50_ms, p99_ms: withIndex.p99_ms, ...(onPeer ? { vs_peer: ratio(withIndex.rps) } : {}), non2xx: withIndex.non2xx }
    results.figures[f('bbox, database path')] = { rps: Math.round(onDatabase.rps), p50_ms: onDatabase.p50_ms, p99_ms: onDatabase.p99_ms, ...(onPeer ? { vs_peer: ratio(onDatabase.rps) } : {}), non2xx: onDatabase.non2xx }
    if (onPeer) results.figures[f('bbox, PostGIS peer')] = { rps: Math.round(onPeer.rps), p50_ms: onPeer.p50_ms, p99_ms: onPeer.p99_ms, non2xx: onPeer.non2xx }
    for (const [name, r] of [['box index', withIndex], ['database path', onDatabase], ['PostGIS peer', onPeer]] as const) {
      if (r) log(`  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}`)
    }
    const afterLoad = processMemory(index.child)
    results.figures[f('server RSS after load')] = {
      rss_mib: indexMemory?.rss_mib ?? NaN,
      box_index: loaded.state,
      after_bbox_rss_mib: afterLoad?.rss_mib ?? NaN,
      peak_rss_mib: afterLoad?.peak_rss_mib ?? NaN,
      database_path_rss_mib: processMemory(database.child)?.rss_mib ?? NaN,
      ...(peer ? { peer_rss_mib: processMemory(peer.child)?.rss_mib ?? NaN } : {})
    }

    // Vector tiles: random tiles holding data, cold then cached, on the box index and on the database path.
    const positions = await tilePositions(DATABASE_URL, TILE_PLACEMARKS)
    const tiles = randomTiles(positions, mulberry32(TILE_SEED + 1))
    const paths = tiles.map(tilePath)
    const bands = Object.entries(tilesPerZoomBand(tiles)).map(([band, n]) => `${band} ${n}`).join(', ')
    log(`load: ${paths.length} random tiles (${bands}) around ${positions.length} random placemarks, ${CONNECTIONS} connections: each once (cold), then round and round for ${turns * turnSeconds} s (cached)`)
    const tileMemory: Figure = {}
    for (const [side, server] of [['box index', index], ['database path', database]] as const) {
      const r = await measureTiles(server, paths)
      const { cold, cached } = r
      // At 10M the first server's index is past BBOX_INDEX_MB: its tiles then come from the database too, as its state says.
      const state: Figure = side === 'box index' ? { box_index: loaded.state } : {}
      results.figures[f(`tiles cold, ${side}`)] = { ...state, tiles: paths.length, zooms: bands, rps: Math.round(cold.rps), p50_ms: cold.p50_ms, p99_ms: cold.p99_ms, max_ms: cold.max_ms, empty: cold.empty, cache_hits: cold.cache_hits, non2xx: cold.non2xx }
      results.figures[f(`tiles cached, ${side}`)] = { ...state, tiles: paths.length, requests: cached.requests, rps: Math.round(cached.rps), p50_ms: cached.p50_ms, p99_ms: cached.p99_ms, max_ms: cached.max_ms, cache_misses: cached.cache_misses, non2xx: cached.non2xx }
      const added = r.rssAfter - r.rssBefore
      if (side === 'box index') Object.assign(tileMemory, { rss_before_mib: r.rssBefore, rss_after_mib: r.rssAfter, added_mib: added, peak_rss_mib: r.peak })
      else Object.assign(tileMemory, { database_path_rss_before_mib: r.rssBefore, database_path_rss_after_mib: r.rssAfter, database_path_added_mib: added })
      log(`  ${side}: cold ${Math.round(cold.rps)} tiles/s, p50 ${cold.p50_ms} ms, p99 ${cold.p99_ms} ms (max ${cold.max_ms} ms); cached ${Math.round(cached.rps)} req/s, p50 ${cached.p50_ms} ms, p99 ${cached.p99_ms} ms; RSS ${r.rssBefore} → ${r.rssAfter} MiB` +
        `${cold.non2xx + cached.non2xx ? `; ${cold.non2xx + cached.non2xx} non-2xx` : ''}${cold.cache_hits ? `; ${cold.cache_hits} cold requests hit the cache` : ''}${cached.cache_misses ? `; ${cached.cache_misses} cached requests missed it` : ''}`)
    }
    results.figures[f('RSS added by the tiles')] = tileMemory

    // The map page over the dataset in Chromium, on the box index's server: its first view (the whole
    // dataset) must draw every point once, in clusters or alone, and no view may log a console error.
    const points = ((await (await fetch(`${index.base}/ogc/collections/placemarks/items?geometry_type=Point&limit=1`)).json()) as { numberMatched: number }).numberMatched
    log(`the map page in Chromium: the whole dataset (${points.toLocaleString('en-US')} points), then ${MAP_VIEWS.map(([name, , , z]) => `${name} z${z}`).join(', ')}`)
    const map = await mapLoadAtScale(index.base, points)
    results.figures[f('map page')] = {
      first_draw_ms: map.first_draw_ms,
      drawn: map.world_drawn,
      points: map.world_points,
      count_gap: Math.abs(map.world_drawn - map.world_points),
      console_errors: map.console_errors.length,
      views: map.views.map((v) => `${v.view} z${v.zoom} ${v.ms} ms (${v.clusters} clusters, ${v.points} points)`).join('; ')
    }
    log(`  first draw ${map.first_draw_ms} ms, ${map.world_drawn.toLocaleString('en-US')} of ${points.toLocaleString('en-US')} points drawn; ` +
      `${map.views.slice(1).map((v) => `${v.view} ${v.ms} ms`).join(', ')}; ${map.console_errors.length} console errors${map.console_errors.length ? `: ${map.console_errors.slice(0, 3).join(' | ')}` : ''}`)
  } finally {
    results.settings.load_average_end = round2(loadavg()[0])
    await cleanup()
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
  }

  const targets = targetsOfScale(JSON.parse(readFileSync(join(root, 'bench', 'targets.json'), 'utf8')) as Parameters<typeof checkTargets>[0], label)
  results.checks = checkTargets(targets)
  writeFileSync(join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
  printScaleTable(label)
}

// The scale table: one row per measure, our box index, our database path and the peer side by side.
function printScaleTable (label: string) {
  const fig = (name: string) => results.figures[`${name} (${label})`] ?? {}
  const checks = new Map(results.checks.map((c) => [c.figure, c]))
  const verdict = (name: string) => { const c = checks.get(`${name} (${label})`); return c ? `${c.target} | ${c.pass ? 'PASS' : 'FAIL'}` : '– | –' }
  const show = (v: unknown, unit = '') => (typeof v === 'number' && Number.isFinite(v) ? `${v.toLocaleString('en-US')}${unit}` : v === undefined || (typeof v === 'number' && Number.isNaN(v)) ? '–' : String(v))
  const [index, db, peer, imp, ready, rss] = ['bbox, box index', 'bbox, database path', 'bbox, PostGIS peer', 'import', 'start to ready', 'server RSS after load'].map(fig)
  const [coldIndex, coldDb, cachedIndex, cachedDb, tileRss, mapPage] = ['tiles cold, box index', 'tiles cold, database path', 'tiles cached, box index', 'tiles cached, database path', 'RSS added by the tiles', 'map page'].map(fig)
  const tileCell = (t: Figure) => `${show(t.p50_ms)} / ${show(t.p99_ms)} ms, ${show(t.rps)}${t.non2xx ? ` (${show(t.non2xx)} non-2xx)` : ''}`
  const rows = [
    `| bbox req/s | ${show(index.rps)} | ${show(db.rps)} | ${show(peer.rps)} | ${show(index.vs_peer, 'x')} / ${show(db.vs_peer, 'x')} | ${verdict('bbox, database path')} |`,
    `| bbox p50 / p99 | ${show(index.p50_ms)} / ${show(index.p99_ms)} ms | ${show(db.p50_ms)} / ${show(db.p99_ms)} ms | ${show(peer.p50_ms)} / ${show(peer.p99_ms)} ms | | |`,
    `| start to ready | ${show(ready.seconds, ' s')} (index ${show(ready.box_index)} at ${show(ready.box_index_seconds, ' s')}) | ${show(ready.database_path_seconds, ' s')} | ${show(ready.peer_seconds, ' s')} | | ${verdict('start to ready')} |`,
    `| server RSS after load | ${show(rss.rss_mib, ' MiB')} (${show(rss.after_bbox_rss_mib, ' MiB')} after the boxes) | ${show(rss.database_path_rss_mib, ' MiB')} | ${show(rss.peer_rss_mib, ' MiB')} | | ${verdict('server RSS after load')} |`,
    `| import wall / peak RSS | ${show(imp.seconds, ' s')} / ${show(imp.peak_rss_mib, ' MiB')} | | ogr2ogr ${show(imp.ogr2ogr_seconds, ' s')} / ${show(imp.ogr2ogr_peak_rss_mib, ' MiB')} | ${show(imp.vs_ogr2ogr, 'x')} the speed | ${verdict('import')} |`,
    `| tiles cold p50 / p99, tiles/s (${show(coldIndex.tiles)} tiles, each once) | ${tileCell(coldIndex)} | ${tileCell(coldDb)} | | | ${verdict('tiles cold, box index')} |`,
    `| tiles cached p50 / p99, req/s (the same tiles again) | ${tileCell(cachedIndex)} | ${tileCell(cachedDb)} | | | ${verdict('tiles cached, box index')} |`,
    `| RSS added by the tiles | ${show(tileRss.added_mib, ' MiB')} (${show(tileRss.rss_before_mib)} → ${show(tileRss.rss_after_mib, ' MiB')}) | ${show(tileRss.database_path_added_mib, ' MiB')} (${show(tileRss.database_path_rss_before_mib)} → ${show(tileRss.database_path_rss_after_mib, ' MiB')}) | | | ${verdict('RSS added by the tiles')} |`,
    `| the map page in Chromium: first draw of the whole dataset, points drawn of the points, console errors | ${show(mapPage.first_draw_ms, ' ms')}, ${show(mapPage.drawn)} of ${show(mapPage.points)}, ${show(mapPage.console_errors)} | | | | ${verdict('map page')} |`
  ]
  console.log([`| ${label} placemarks (${CONNECTIONS} connections, ${timing().turns} turns of ${timing().turnSeconds} s) | ours, box index | ours, database path | PostGIS peer | ratio to the peer | target | result |`, '|---|---|---|---|---|---|---|', ...rows].join('\n'))
  // Targeted figures the table does not show (the other sizes' names never reach here).
  const shown = new Set(['bbox, database path', 'start to ready', 'server RSS after load', 'import', 'tiles cold, box index', 'tiles cached, box index', 'RSS added by the tiles', 'map page'].map((n) => `${n} (${label})`))
  const others = results.checks.filter((c) => !shown.has(c.figure)).map((c) => `| ${c.figure} | ${JSON.stringify(results.figures[c.figure] ?? 'not measured')} | ${c.target} | ${c.pass ? 'PASS' : 'FAIL'} |`)
  if (others.length) console.log(['', '| figure | measured | target | result |', '|---|---|---|---|', ...others].join('\n'))
  const [kml, compared] = [fig('generated KML'), fig('answers compared')]
  console.log(`\ngenerated KML: ${show(kml.mib, ' MiB')} in ${show(kml.seconds, ' s')}; databases after the loads: ours ${show(fig('import').database_mib, ' MiB')}, the peer's ${show(fig('import').ogr2ogr_database_mib, ' MiB')}; load average ${show(results.settings.load_average_start)} at the start, ${show(results.settings.load_average_end)} at the end (2 cores: above 2, other work shared the machine)`)
  console.log(`answers compared before timing: ${show(compared.boxes)} boxes, ${show(compared.placemarks)} placemarks, the peer ${compared.with_peer === 'yes' ? 'included' : 'skipped'}`)
  const passed = results.checks.filter((c) => c.pass).length
  console.log(results.checks.length
    ? `\n${passed} of ${results.checks.length} targets of ${label} met; written: bench/results.json`
    : `\nno targets for ${label} placemarks (bench/targets.json sets them for 1M and 10M); written: bench/results.json`)
}

// Signs in as the first demo user through the development identity provider, like a browser would.
async function signIn (base: string): Promise<string> {
  const login = await fetch(`${base}/api/auth/identity/login`, { redirect: 'manual' })
  const authorize = login.headers.get('location')
  if (!authorize) throw new Error(`login answered ${login.status}`)
  // Every cookie the login sets goes back (state, and the PKCE verifier where the server uses one).
  const cookie = login.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ')
  const page = await (await fetch(new URL(authorize, base))).text()
  const href = /href="([^"]*code=[^"]*)"/.exec(page)?.[1]?.replace(/&#38;|&amp;/g, '&')
  if (!href) throw new Error('no sign-in link on the authorize page')
  const callback = new URL(href, base)
  const res = await fetch(`${base}/api/auth/identity?code=${encodeURIComponent(callback.searchParams.get('code') ?? '')}&state=${encodeURIComponent(callback.searchParams.get('state') ?? '')}`, { headers: { cookie } })
  if (!res.ok) throw new Error(`sign-in answered ${res.status}`)
  return ((await res.json()) as { accessToken: string }).accessToken
}

/**
 * Judges each figure of bench/targets.json: {"at_least": {metric: n}, "below": {metric: n}}. A figure not
 * measured, or with any non-2xx answer, error or timeout, fails: it would measure nothing.
 */
function checkTargets (targets: Record<string, { at_least?: Record<string, number>; below?: Record<string, number> }>): Check[] {
  return Object.entries(targets).map(([figure, t]) => {
    const f = results.figures[figure]
    const value = (metric: string) => (typeof f?.[metric] === 'number' ? (f[metric] as number) : NaN)
    const atLeast = Object.entries(t.at_least ?? {}).map(([m, n]) => ({ text: `${m} >= ${n}`, ok: value(m) >= n }))
    const below = Object.entries(t.below ?? {}).map(([m, n]) => ({ text: `${m} < ${n}`, ok: value(m) < n }))
    const parts = [...atLeast, ...below]
    return { figure, target: parts.map((p) => p.text).join(', '), pass: f !== undefined && !f.non2xx && parts.every((p) => p.ok) }
  })
}

function printTables () {
  const checks = new Map(results.checks.map((c) => [c.figure, c]))
  const verdict = (name: string) => { const c = checks.get(name); return c ? `${c.target} | ${c.pass ? 'PASS' : 'FAIL'}` : '– | –' }
  // The small answers: one row per answer and runtime, CPU µs per answer (then req/s) of ours and each peer.
  const peerRows = Object.keys(results.figures).filter((n) => results.figures[n].floor_us !== undefined)
  const sides = (f: Figure, unit: 'us' | 'rps') => [f[unit], ...PEERS.map((p) => f[`${p.key}_${unit}`])].join(' | ')
  const { turns: peerTurns, turnSeconds: peerSeconds } = peerTiming(cli.quick)
  if (peerRows.length) {
    console.log([`| CPU µs per answer (${CONNECTIONS} connections, median of ${peerTurns} turns of ${peerSeconds} s) | Node | bytes | ours | ${PEERS.map((p) => p.label).join(' | ')} | vs floor | vs Fastify stack | vs Express stack | target | result |`,
      `|---|---|---|---|${PEERS.map(() => '---|').join('')}---|---|---|---|---|`,
      ...peerRows.map((n) => { const f = results.figures[n]; return `| ${baseName(n)} | ${f.node} | ${f.bytes} | ${sides(f, 'us')} | ${f.vs_floor} | ${f.vs_fastify_stack} | ${f.vs_express_stack} | ${verdict(n)} |` })].join('\n'))
    console.log(['', `| req/s (the same turns) | Node | ours | ${PEERS.map((p) => p.label).join(' | ')} |`, `|---|---|---|${PEERS.map(() => '---|').join('')}`,
      ...peerRows.map((n) => { const f = results.figures[n]; return `| ${baseName(n)} | ${f.node} | ${sides(f, 'rps')} |` })].join('\n'))
    console.log('\n(vs X: X\'s CPU per answer over ours; a shared machine moves every figure, the ratios of one run less)')
  }
  // Every other figure, and any targeted one that was not measured.
  const others = [...new Set([...Object.keys(results.figures), ...checks.keys()])].filter((n) => !peerRows.includes(n))
  const otherRows = others.map((n) => {
    const f = results.figures[n]
    return `| ${n} | ${f ? Object.entries(f).map(([k, v]) => `${k} ${v}`).join(', ') : 'not measured'} | ${verdict(n)} |`
  })
  console.log(['', '| figure | measured | target | result |', '|---|---|---|---|', ...otherRows].join('\n'))
  const passed = results.checks.filter((c) => c.pass).length
  const sized = cli.small || (cli.events !== null && cli.events < 10_000_000)
  console.log(`\n${passed} of ${results.checks.length} targets met${sized ? ' (small sizes: the targets are set for the full run)' : ''}; written: bench/results.json`)
}

await runAsProgram(command, import.meta.url)
