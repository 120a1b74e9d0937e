// The load runs on one throw-away database (the default run, --quick, --small, --analytics): the small
// answers against the peers on every Node measured, the same over IPv6, the random city boxes, then the
// analytics figures; each judged against bench/targets.json and printed.

import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import pg from 'pg'
import { generateKml } from '../scripts/generate-kml.ts'
import { isScaleFigure } from './scale.ts'
import { baseName, benchRuntimes, floorHeaders, onRuntime, peerFigure, peerTargets, peerTiming, PEERS, sideFigure, type PeerKey, type Runtime, type SideFigure } from './peers/sides.ts'
import { adminUrl, checkTargets, cli, CONNECTIONS, GUILDS, log, printTables, results, round2, sizes, timing } from './report.ts'
import { cpuSeconds, IMPORT_OPTIONS, LOADER, memoryMb, quiesce, root, run, settle, startProcess, startServer, stop } from './processes.ts'
import { getBytes, load, randomBoxes, record, type Side } from './load.ts'
import { ANALYTICS_FIGURES, BATCH, INGEST_CONCURRENCY, measureAnalytics, seedActivity } from './analytics.ts'

// The small answers measured against the peers, by figure name (the names of bench/targets.json).
const PEER_FIGURES: { name: string; path: string; auth?: boolean }[] = [
  { name: 'one placemark', path: '/api/v1/placemarks/1' },
  { name: 'stats', path: '/api/v1/stats' },
  { name: 'folders', path: '/api/v1/folders' },
  { name: 'placemarks page (10)', path: '/api/v1/placemarks?limit=10' },
  { name: 'auth/me', path: '/api/auth/me', auth: true }
]

interface Answer { url: string; contentType: string; bodyBase64: string; headers: Record<string, string | string[]> }

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
  const imp = await run(process.execPath, [...IMPORT_OPTIONS, '--import', LOADER, 'scripts/import.ts', kml, '--timezone', 'America/Los_Angeles'], { DATABASE_URL })
  if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
  const m = /in ([\d.]+) s[\s\S]*peak RSS (\d+) MB/.exec(imp.stdout)
  const seconds = m ? Number(m[1]) : imp.seconds
  results.figures.import = { placemarks: sizes().placemarks, seconds, per_second: Math.round(sizes().placemarks / seconds), peak_rss_mb: m ? Number(m[2]) : -1, wall_seconds: Math.round(imp.seconds * 10) / 10 }
  log(`  ${results.figures.import.per_second} placemarks/s, peak RSS ${results.figures.import.peak_rss_mb} MB`)
}

// --quick: the project's own sample KML, enough for the small answers.
async function importSample (DATABASE_URL: string) {
  const imp = await run(process.execPath, [...IMPORT_OPTIONS, '--import', LOADER, 'scripts/import.ts', join(root, 'db', 'sample', 'sample.kml')], { DATABASE_URL })
  if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
}

export async function main () {
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
