import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createInterface } from 'node:readline'
import pg from 'pg'
import autocannon from 'autocannon'
import { generateKml, mulberry32 } from './generate-kml.ts'

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, keep: { type: 'boolean', default: false } } })
const quick = values.quick
const PLACEMARKS = quick ? 20_000 : 1_000_000
const EVENTS = quick ? 200_000 : 10_000_000
const USERS = quick ? 2_000 : 100_000
const GUILDS = 100
const DURATION = quick ? 3 : 10
const WARMUP = quick ? 1 : 3
const CONNECTIONS = 32
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

interface EndpointResult { rps: number; p50_ms: number; p99_ms: number; baseline_rps: number | null; ratio: number | null; non2xx: number }
const results: { endpoints: Record<string, EndpointResult>; import?: Record<string, number>; activity_import?: Record<string, number>; server?: Record<string, number>; quick: boolean; machine: string; at: string } = {
  endpoints: {}, quick, machine: `${process.platform} ${process.arch}, node ${process.version}`, at: new Date().toISOString()
}

const log = (msg: string) => process.stderr.write(`${msg}\n`)

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  const started = performance.now()
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('close', (code) => done({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 }))
  })
}

async function startProcess(args: string[], env: Record<string, string>, ready: (line: string) => string | null): Promise<{ child: ChildProcess; value: string }> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
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

async function load(url: string, opts: { requests?: autocannon.Request[]; headers?: Record<string, string>; connections?: number; duration?: number } = {}) {
  const r = await autocannon({ url, connections: opts.connections ?? CONNECTIONS, duration: opts.duration ?? DURATION, headers: opts.headers, requests: opts.requests })
  // Requests over the run's actual length: autocannon's average is over whole-second samples.
  return { rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors + r.timeouts }
}

// The bare server's path for an endpoint's bytes: plain characters only, so that the router matches it as is.
const barePath = (name: string) => `/b/${name.replace(/[^a-z0-9]+/gi, '-')}`

// Rounds of the alternation below: short turns, so that a slow spell of the machine (seconds long on this
// shared one) falls on both sides; two 5-second halves each moved single ratios by ±0.1. A turn lasts at
// least a second (autocannon counts whole seconds).
const ROUNDS = quick ? 3 : 5

/**
 * Measures a route and its baseline in alternating turns (baseline, route, baseline, route…), DURATION
 * seconds each in all, so that a slow spell of the shared machine weighs on both sides of the ratio alike.
 */
async function paired(url: string, baselineUrl: string, opts: { headers?: Record<string, string> } = {}) {
  // Warm up both sides first: the first seconds of a fresh process run unoptimized code.
  await load(baselineUrl, { duration: WARMUP })
  await load(url, { ...opts, duration: WARMUP })
  const turns: Awaited<ReturnType<typeof load>>[][] = [[], []]
  for (let i = 0; i < ROUNDS; i++) {
    turns[1].push(await load(baselineUrl, { duration: DURATION / ROUNDS }))
    turns[0].push(await load(url, { ...opts, duration: DURATION / ROUNDS }))
  }
  const baselineErrors = turns[1].reduce((sum, r) => sum + r.non2xx, 0)
  if (baselineErrors) throw new Error(`the baseline ${baselineUrl} gave ${baselineErrors} non-2xx answers: its figure would mean nothing`)
  return turns.map((runs) => ({
    rps: runs.reduce((sum, r) => sum + r.rps, 0) / runs.length,
    p50: Math.max(...runs.map((r) => r.p50)),
    p99: Math.max(...runs.map((r) => r.p99)),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0)
  })) as [Awaited<ReturnType<typeof load>>, Awaited<ReturnType<typeof load>>]
}

// CPU seconds a process has used so far (Linux), or null where /proc is not there.
function cpuSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

// Resident and peak memory of a process in MB (Linux), from /proc.
function memoryMb(pid: number): { rss_mb: number; peak_rss_mb: number } | null {
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
async function settle(pid: number) {
  const started = Date.now()
  let last = cpuSeconds(pid)
  while (last !== null && Date.now() - started < 300_000) {
    await new Promise((r) => setTimeout(r, 1000))
    const now = cpuSeconds(pid)
    if (now === null || now - last < 0.05) return
    last = now
  }
}

// Autovacuum after the bulk loads would take a core from the measurements: wait until it is done.
async function quiesce(admin: pg.Client, dbName: string) {
  const started = Date.now()
  while (Date.now() - started < 300_000) {
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND (backend_type = 'autovacuum worker' OR query ILIKE 'vacuum%' OR query ILIKE 'analyze%')`, [dbName])
    if (rows[0].n === 0) return
    await new Promise((r) => setTimeout(r, 1000))
  }
  log('  autovacuum still running after 5 minutes; measuring anyway')
}

async function main() {
  const dbName = `bench_${Date.now().toString(36)}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${dbName}`)
  const dbUrl = new URL(adminUrl)
  dbUrl.pathname = `/${dbName}`
  const DATABASE_URL = dbUrl.toString()
  const children: ChildProcess[] = []
  try {
    // 1. Placemarks: generate the KML once per size, import it with the real CLI.
    const dataDir = join(root, 'bench', 'data')
    mkdirSync(dataDir, { recursive: true })
    const kml = join(dataDir, `placemarks-${PLACEMARKS}.kml`)
    if (!existsSync(kml)) {
      log(`generating ${PLACEMARKS} placemarks → ${kml}`)
      await generateKml(kml, PLACEMARKS, 1)
    }
    log(`importing ${kml}`)
    const imp = await run(process.execPath, ['--import', 'tsx', 'scripts/import.ts', kml, '--timezone', 'America/Los_Angeles'], { DATABASE_URL })
    if (imp.code !== 0) throw new Error(`import failed: ${imp.stderr}`)
    const m = /in ([\d.]+) s[\s\S]*peak RSS (\d+) MB/.exec(imp.stdout)
    const importSeconds = m ? Number(m[1]) : imp.seconds
    results.import = { placemarks: PLACEMARKS, seconds: importSeconds, per_second: Math.round(PLACEMARKS / importSeconds), peak_rss_mb: m ? Number(m[2]) : -1, wall_seconds: Math.round(imp.seconds * 10) / 10 }
    log(`  ${results.import.per_second} placemarks/s, peak RSS ${results.import.peak_rss_mb} MB`)

    // 2. Activity events through the seed CLI, when the analytics part is present.
    if (existsSync(join(root, 'scripts', 'seed-activity.ts'))) {
      log(`seeding ${EVENTS} activity events over ${GUILDS} guilds`)
      const act = await run(process.execPath, ['--import', 'tsx', 'scripts/seed-activity.ts', '--guilds', String(GUILDS), '--users', String(USERS), '--events', String(EVENTS), '--seed', '7'], { DATABASE_URL })
      if (act.code !== 0) throw new Error(`activity seed failed: ${act.stderr}`)
      results.activity_import = { events: EVENTS, seconds: Math.round(act.seconds * 10) / 10, per_second: Math.round(EVENTS / act.seconds) }
      log(`  ${results.activity_import.per_second} events/s (wall clock, including start-up)`)
    }

    // Vacuum now: an autovacuum of the 10M events starting in the middle of a measurement would take a core.
    const vacuum = new pg.Client({ connectionString: DATABASE_URL })
    await vacuum.connect()
    await vacuum.query('VACUUM (ANALYZE)').finally(() => vacuum.end())

    // 3. The server under test, with limits out of the way of the load generator.
    const port = 20000 + Math.floor(Math.random() * 20000)
    const base = `http://127.0.0.1:${port}`
    const serverChild = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
      cwd: root, stdio: 'ignore',
      env: { ...process.env, DATABASE_URL, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'development', RATE_LIMIT_MAX: '100000000', AUTH_RATE_LIMIT_MAX: '100000000', SIGNIN_MAX_FAILURES: '1000000', DB_POOL_MAX: '20', JWT_SECRET: 'bench-access-secret-0123456789abcdefghijklmnop', JWT_REFRESH_SECRET: 'bench-refresh-secret-0123456789abcdefghijklmn' }
    })
    children.push(serverChild)
    for (let i = 0; i < 120; i++) {
      try { if ((await fetch(`${base}/health`)).ok) break } catch { /* not up yet */ }
      await new Promise((r) => setTimeout(r, 500))
    }

    const cached: Record<string, string> = {
      'placemarks page': '/api/v1/placemarks?limit=100&offset=5000',
      'one placemark': `/api/v1/placemarks/${Math.floor(PLACEMARKS / 2)}`,
      timeline: '/api/v1/timeline',
      folders: '/api/v1/folders',
      stats: '/api/v1/stats'
    }
    const bodies: Record<string, string> = {}
    for (const [name, path] of Object.entries(cached)) {
      const res = await fetch(base + path)
      if (!res.ok) throw new Error(`${path} answered ${res.status}`)
      bodies[barePath(name)] = await res.text()
    }
    const bodiesFile = join(dataDir, 'bare-bodies.json')
    writeFileSync(bodiesFile, JSON.stringify(bodies))
    const bare = await startProcess(['--import', 'tsx', 'bench/bare-server.ts', bodiesFile], {}, (line) => (line.startsWith('http') ? line.trim() : null))
    children.push(bare.child)

    const record = (name: string, r: Awaited<ReturnType<typeof load>>, baseline: number | null) => {
      results.endpoints[name] = { rps: Math.round(r.rps), p50_ms: r.p50, p99_ms: r.p99, baseline_rps: baseline === null ? null : Math.round(baseline), ratio: baseline ? Math.round((r.rps / baseline) * 100) / 100 : null, non2xx: r.non2xx }
      log(`  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms${baseline ? `, ratio ${(r.rps / baseline).toFixed(2)}` : ''}`)
      // A figure made of error answers measures nothing: say so loudly.
      if (r.non2xx) log(`  WARNING: ${name} had ${r.non2xx} non-2xx answers, errors or timeouts`)
    }

    await quiesce(admin, dbName)
    if (serverChild.pid) await settle(serverChild.pid)

    log('load: cached placemark reads against the bare server returning the same bytes')
    for (const [name, path] of Object.entries(cached)) {
      const [real, baseline] = await paired(base + path, bare.value + barePath(name))
      record(name, real, baseline.rps)
    }

    log('load: bbox, random city-sized boxes')
    const rand = mulberry32(42)
    const cities: [number, number][] = [[-115.17, 36.11], [-118.24, 34.05], [-74.0, 40.71], [-0.12, 51.5], [2.35, 48.86], [139.69, 35.69]]
    // Unique boxes for every request: the benchmark measures the index, not a cache.
    const boxes = Array.from({ length: 200_000 }, () => {
      const [lon, lat] = cities[Math.floor(rand() * cities.length)]
      const x = lon + (rand() - 0.5) * 0.5
      const y = lat + (rand() - 0.5) * 0.5
      return `/api/v1/spatial/bbox?min_lon=${(x - 0.02).toFixed(4)}&min_lat=${(y - 0.02).toFixed(4)}&max_lon=${(x + 0.02).toFixed(4)}&max_lat=${(y + 0.02).toFixed(4)}&limit=100`
    })
    let next = 0
    const randomBoxes = [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: boxes[next++ % boxes.length] }) }]
    await load(base, { requests: randomBoxes, duration: WARMUP })
    record('bbox (random city boxes, 1 connection)', await load(base, { requests: randomBoxes, connections: 1 }), null)
    record('bbox (random city boxes)', await load(base, { requests: randomBoxes }), null)

    const memory = serverChild.pid ? memoryMb(serverChild.pid) : null
    if (memory) {
      results.server = memory
      log(`  server memory after the box queries: RSS ${memory.rss_mb} MB, peak ${memory.peak_rss_mb} MB`)
    }

    const token = await signIn(base).catch((err: Error) => { log(`  sign-in for the auth benchmarks failed: ${err.message}`); return null })
    if (token) {
      const headers = { authorization: `Bearer ${token}` }
      const [me, constant] = await paired(`${base}/api/auth/me`, `${bare.value}/const`, { headers })
      log(`  bare constant route: ${Math.round(constant.rps)} req/s`)
      record('auth/me', me, constant.rps)
      const guildId = '700000000000000001'
      const ghosts = `${base}/api/ghosts?guildId=${guildId}&limit=100`
      record('ghosts (one guild, 1 connection)', await load(ghosts, { headers, connections: 1 }), null)
      record('ghosts (one guild, 32 connections)', await load(ghosts, { headers }), null)
    }
  } finally {
    for (const child of children) child.kill('SIGTERM')
    await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : null)))
    if (!values.keep) await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {})
    await admin.end()
  }

  mkdirSync(join(root, 'bench'), { recursive: true })
  writeFileSync(join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
  printTable()
}

// Signs in as the first demo user through the development identity provider, like a browser would.
async function signIn(base: string): Promise<string> {
  const login = await fetch(`${base}/api/auth/identity/login`, { redirect: 'manual' })
  const authorize = login.headers.get('location')
  if (!authorize) throw new Error(`login answered ${login.status}`)
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]
  const page = await (await fetch(new URL(authorize, base))).text()
  const href = /href="([^"]*code=[^"]*)"/.exec(page)?.[1]?.replace(/&#38;|&amp;/g, '&')
  if (!href) throw new Error('no sign-in link on the authorize page')
  const callback = new URL(href, base)
  const res = await fetch(`${base}/api/auth/identity?code=${encodeURIComponent(callback.searchParams.get('code') ?? '')}&state=${encodeURIComponent(callback.searchParams.get('state') ?? '')}`, { headers: { cookie } })
  if (!res.ok) throw new Error(`sign-in answered ${res.status}`)
  return ((await res.json()) as { accessToken: string }).accessToken
}

function printTable() {
  const rows = Object.entries(results.endpoints).map(([name, r]) =>
    `| ${name} | ${r.rps} | ${r.p50_ms} | ${r.p99_ms} | ${r.baseline_rps ?? '–'} | ${r.ratio ?? '–'} |`)
  console.log(['| endpoint | req/s | p50 ms | p99 ms | baseline req/s | ratio |', '|---|---|---|---|---|---|', ...rows].join('\n'))
  if (results.import) console.log(`\nimport: ${results.import.placemarks} placemarks in ${results.import.seconds} s = ${results.import.per_second}/s, peak RSS ${results.import.peak_rss_mb} MB`)
  if (results.activity_import) console.log(`activity: ${results.activity_import.events} events in ${results.activity_import.seconds} s = ${results.activity_import.per_second}/s`)
  if (results.server) console.log(`server: RSS ${results.server.rss_mb} MB after the box queries, peak ${results.server.peak_rss_mb} MB`)
  console.log('\nwritten: bench/results.json')
}

await main()
