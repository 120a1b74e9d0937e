// The bench at scale (--scale): our import, server and both box paths against a PostGIS peer, the
// vector tiles on both of our servers and the map page in Chromium; the scale table.

import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { once } from 'node:events'
import { join } from 'node:path'
import pg from 'pg'
import autocannon from 'autocannon'
import { generateKml, mulberry32 } from '../scripts/generate-kml.ts'
import { defaultPoolMax } from '../lib/config.ts'
import { MAP_VIEWS, mapLoadAtScale } from './map-load.ts'
import { bboxPath, boundaryBoxes, idsDiffer, percentile, randomTiles, scaleLabel, targetsOfScale, tilePath, tilesPerZoomBand } from './scale.ts'
import type { TileXYZ } from '../lib/geo/tiles.ts'
import { adminUrl, checkTargets, cli, CONNECTIONS, type Figure, log, results, round2, timing } from './report.ts'
import { IMPORT_OPTIONS, LOADER, processMemory, quiesce, root, run, runMeasured, type Server, settle, sleep, startProcess, startProductionServer, steadyMemory, tracked, type Tracker } from './processes.ts'
import { cityBoxPaths, getBytes, randomBoxes, type Side } from './load.ts'

const INSTALL_PEER = 'apt-get install -y postgresql-15-postgis-3 gdal-bin'

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
 * One map client: a browser opens at most 6 connections to a host over HTTP/1.1, and a map's tiles come
 * through them. At 32 connections the server is saturated and a tile's latency is mostly its place in
 * the line (Little's law: 32 requests under way over the tiles per second); at 6 it is what one map's user
 * waits for.
 */
export const MAP_CLIENT_CONNECTIONS = 6

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

/** The bench's random tiles of a database, in a random order, and how many placemarks they were drawn around. */
export async function benchTiles (DATABASE_URL: string): Promise<{ tiles: TileXYZ[]; around: number }> {
  const positions = await tilePositions(DATABASE_URL, TILE_PLACEMARKS)
  return { tiles: randomTiles(positions, mulberry32(TILE_SEED + 1)), around: positions.length }
}

interface TileRun { requests: number; seconds: number; rps: number; p50_ms: number; p99_ms: number; max_ms: number; empty: number; non2xx: number }

// A tile run's rate and times, as its figures record them.
const runFigure = (r: TileRun): Figure => ({ rps: Math.round(r.rps), p50_ms: r.p50_ms, p99_ms: r.p99_ms, max_ms: r.max_ms })

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
 * One autocannon run over the tile paths in their order at `connections` connections (CONNECTIONS unless
 * told), each path asked once (`amount`: as many requests as paths) or round and round for `duration`
 * seconds; every response time kept. `empty`: the 204s (a tile with no feature).
 */
export function loadTiles (base: string, paths: string[], run: { amount: number } | { duration: number }, connections = CONNECTIONS): Promise<TileRun> {
  const latencies: number[] = []
  let next = 0
  let empty = 0
  return withoutBodies(() => new Promise((resolve, reject) => {
    const [done, fail] = [resolve, reject]
    const requests = [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[next++ % paths.length] }) }]
    // autocannon ends a run of `amount` requests at its next one-second sample, and its duration counts to
    // there: the time is taken here instead, from the start to the last answer.
    const started = performance.now()
    let last = started
    const instance = autocannon({ url: base, connections, timeout: TILE_TIMEOUT_S, requests, ...run }, (err, r) => {
      if (err) return fail(err)
      latencies.sort((a, b) => a - b)
      const seconds = 'amount' in run ? (last - started) / 1000 : r.duration
      done({
        requests: r.requests.total,
        seconds: round2(seconds),
        rps: r.requests.total / seconds,
        p50_ms: round2(percentile(latencies, 0.5)),
        p99_ms: round2(percentile(latencies, 0.99)),
        max_ms: round2(latencies[latencies.length - 1] ?? NaN),
        empty,
        non2xx: r.non2xx + r.errors + r.timeouts
      })
    })
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      last = performance.now()
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
async function measureTiles (server: Server, paths: string[], connections = CONNECTIONS) {
  const before = processMemory(server.child)
  const start = await cacheCounts(server.base)
  const cold = await loadTiles(server.base, paths, { amount: paths.length }, connections)
  const afterCold = await cacheCounts(server.base)
  const cached = await loadTiles(server.base, paths, { duration: timing().turns * timing().turnSeconds }, connections)
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

export async function mainScale (placemarks: number) {
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
    const imp = await runMeasured(process.execPath, [...IMPORT_OPTIONS, '--import', LOADER, 'scripts/import.ts', kml, '--timezone', 'America/Los_Angeles'], { DATABASE_URL }, track)
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
    const indexMemory = await steadyMemory(index.child)
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
    const { tiles, around } = await benchTiles(DATABASE_URL)
    const paths = tiles.map(tilePath)
    const bands = Object.entries(tilesPerZoomBand(tiles)).map(([band, n]) => `${band} ${n}`).join(', ')
    log(`load: ${paths.length} random tiles (${bands}) around ${around} random placemarks, ${CONNECTIONS} connections: each once (cold), then round and round for ${turns * turnSeconds} s (cached)`)
    const tileMemory: Figure = {}
    for (const [side, server] of [['box index', index], ['database path', database]] as const) {
      const r = await measureTiles(server, paths)
      const { cold, cached } = r
      // At 10M the first server's index is past BBOX_INDEX_MB: its tiles then come from the database too, as its state says.
      const state: Figure = side === 'box index' ? { box_index: loaded.state } : {}
      results.figures[f(`tiles cold, ${side}`)] = { ...state, tiles: paths.length, zooms: bands, ...runFigure(cold), empty: cold.empty, cache_hits: cold.cache_hits, non2xx: cold.non2xx }
      results.figures[f(`tiles cached, ${side}`)] = { ...state, tiles: paths.length, requests: cached.requests, ...runFigure(cached), cache_misses: cached.cache_misses, non2xx: cached.non2xx }
      const added = r.rssAfter - r.rssBefore
      if (side === 'box index') Object.assign(tileMemory, { rss_before_mib: r.rssBefore, rss_after_mib: r.rssAfter, added_mib: added, peak_rss_mib: r.peak })
      else Object.assign(tileMemory, { database_path_rss_before_mib: r.rssBefore, database_path_rss_after_mib: r.rssAfter, database_path_added_mib: added })
      log(`  ${side}: cold ${Math.round(cold.rps)} tiles/s, p50 ${cold.p50_ms} ms, p99 ${cold.p99_ms} ms (max ${cold.max_ms} ms); cached ${Math.round(cached.rps)} req/s, p50 ${cached.p50_ms} ms, p99 ${cached.p99_ms} ms; RSS ${r.rssBefore} → ${r.rssAfter} MiB` +
        `${cold.non2xx + cached.non2xx ? `; ${cold.non2xx + cached.non2xx} non-2xx` : ''}${cold.cache_hits ? `; ${cold.cache_hits} cold requests hit the cache` : ''}${cached.cache_misses ? `; ${cached.cache_misses} cached requests missed it` : ''}`)
    }
    results.figures[f('RSS added by the tiles')] = tileMemory
    // The same tiles from the PostGIS peer (pg_tileserv's table layer: bench/peers/postgis.ts), each once: ours over its tiles/s.
    if (peer) {
      const theirs = await loadTiles(peer.base, paths, { amount: paths.length })
      results.figures[f('tiles cold, PostGIS peer')] = { tiles: paths.length, ...runFigure(theirs), empty: theirs.empty, non2xx: theirs.non2xx }
      for (const side of ['box index', 'database path']) {
        const ours = results.figures[f(`tiles cold, ${side}`)]
        Object.assign(ours, { vs_peer: round2((ours.rps as number) / theirs.rps), peer_p99_ms: theirs.p99_ms })
      }
      log(`  PostGIS peer: cold ${Math.round(theirs.rps)} tiles/s, p50 ${theirs.p50_ms} ms, p99 ${theirs.p99_ms} ms (max ${theirs.max_ms} ms)${theirs.non2xx ? `; ${theirs.non2xx} non-2xx` : ''}`)
    }

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

    // One map client (MAP_CLIENT_CONNECTIONS): the same tiles, cold on a fresh server with the box index
    // (the first one's tiles are all cached by now, and it goes first to free its memory), then cached;
    // and the peer's at the same connections.
    log(`load: one map client, ${MAP_CLIENT_CONNECTIONS} connections: the same tiles on a fresh server with the box index, each once (cold), then round and round (cached)${peer ? '; then the peer\'s, each once' : ''}`)
    index.child.kill('SIGTERM')
    await once(index.child, 'exit')
    const restarted = performance.now()
    const client = await startProductionServer('ours, box index, one map client', DATABASE_URL, {}, track)
    const clientIndex = await waitForBoxIndex(client, restarted)
    if (client.child.pid) await settle(client.child.pid)
    const { cold, cached } = await measureTiles(client, paths, MAP_CLIENT_CONNECTIONS)
    const theirs = peer ? await loadTiles(peer.base, paths, { amount: paths.length }, MAP_CLIENT_CONNECTIONS) : null
    const state: Figure = { box_index: clientIndex.state, connections: MAP_CLIENT_CONNECTIONS, tiles: paths.length }
    const versusPeer: Figure = theirs ? { peer_rps: Math.round(theirs.rps), peer_p50_ms: theirs.p50_ms, peer_p99_ms: theirs.p99_ms, vs_peer: round2(cold.rps / theirs.rps) } : {}
    results.figures[f('tiles cold, one map client')] = { ...state, ...runFigure(cold), cache_hits: cold.cache_hits, non2xx: cold.non2xx, ...versusPeer }
    results.figures[f('tiles cached, one map client')] = { ...state, requests: cached.requests, ...runFigure(cached), cache_misses: cached.cache_misses, non2xx: cached.non2xx }
    log(`  box index: cold ${Math.round(cold.rps)} tiles/s, p50 ${cold.p50_ms} ms, p99 ${cold.p99_ms} ms (max ${cold.max_ms} ms); cached ${Math.round(cached.rps)} req/s, p50 ${cached.p50_ms} ms, p99 ${cached.p99_ms} ms` +
      `${theirs ? `; PostGIS peer: cold ${Math.round(theirs.rps)} tiles/s, p50 ${theirs.p50_ms} ms, p99 ${theirs.p99_ms} ms` : ''}${cold.non2xx + cached.non2xx ? `; ${cold.non2xx + cached.non2xx} non-2xx` : ''}`)
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
  const [coldIndex, coldDb, coldPeer, cachedIndex, cachedDb, tileRss, mapPage] = ['tiles cold, box index', 'tiles cold, database path', 'tiles cold, PostGIS peer', 'tiles cached, box index', 'tiles cached, database path', 'RSS added by the tiles', 'map page'].map(fig)
  const [clientCold, clientCached] = ['tiles cold, one map client', 'tiles cached, one map client'].map(fig)
  const tileCell = (t: Figure) => `${show(t.p50_ms)} / ${show(t.p99_ms)} ms, ${show(t.rps)}${t.non2xx ? ` (${show(t.non2xx)} non-2xx)` : ''}`
  const rows = [
    `| bbox req/s | ${show(index.rps)} | ${show(db.rps)} | ${show(peer.rps)} | ${show(index.vs_peer, 'x')} / ${show(db.vs_peer, 'x')} | ${verdict('bbox, database path')} |`,
    `| bbox p50 / p99 | ${show(index.p50_ms)} / ${show(index.p99_ms)} ms | ${show(db.p50_ms)} / ${show(db.p99_ms)} ms | ${show(peer.p50_ms)} / ${show(peer.p99_ms)} ms | | |`,
    `| start to ready | ${show(ready.seconds, ' s')} (index ${show(ready.box_index)} at ${show(ready.box_index_seconds, ' s')}) | ${show(ready.database_path_seconds, ' s')} | ${show(ready.peer_seconds, ' s')} | | ${verdict('start to ready')} |`,
    `| server RSS after load | ${show(rss.rss_mib, ' MiB')} (${show(rss.after_bbox_rss_mib, ' MiB')} after the boxes) | ${show(rss.database_path_rss_mib, ' MiB')} | ${show(rss.peer_rss_mib, ' MiB')} | | ${verdict('server RSS after load')} |`,
    `| import wall / peak RSS | ${show(imp.seconds, ' s')} / ${show(imp.peak_rss_mib, ' MiB')} | | ogr2ogr ${show(imp.ogr2ogr_seconds, ' s')} / ${show(imp.ogr2ogr_peak_rss_mib, ' MiB')} | ${show(imp.vs_ogr2ogr, 'x')} the speed | ${verdict('import')} |`,
    `| tiles cold p50 / p99, tiles/s (${show(coldIndex.tiles)} tiles, each once) | ${tileCell(coldIndex)} | ${tileCell(coldDb)} | ${tileCell(coldPeer)} | ${show(coldIndex.vs_peer, 'x')} / ${show(coldDb.vs_peer, 'x')} | ${verdict('tiles cold, box index')} |`,
    `| tiles cached p50 / p99, req/s (the same tiles again) | ${tileCell(cachedIndex)} | ${tileCell(cachedDb)} | | | ${verdict('tiles cached, box index')} |`,
    `| one map client (${show(clientCold.connections)} connections): tiles cold p50 / p99, tiles/s | ${tileCell(clientCold)} | | ${tileCell({ p50_ms: clientCold.peer_p50_ms, p99_ms: clientCold.peer_p99_ms, rps: clientCold.peer_rps })} | ${show(clientCold.vs_peer, 'x')} | ${verdict('tiles cold, one map client')} |`,
    `| one map client: tiles cached p50 / p99, req/s | ${tileCell(clientCached)} | | | | ${verdict('tiles cached, one map client')} |`,
    `| RSS added by the tiles | ${show(tileRss.added_mib, ' MiB')} (${show(tileRss.rss_before_mib)} → ${show(tileRss.rss_after_mib, ' MiB')}) | ${show(tileRss.database_path_added_mib, ' MiB')} (${show(tileRss.database_path_rss_before_mib)} → ${show(tileRss.database_path_rss_after_mib, ' MiB')}) | | | ${verdict('RSS added by the tiles')} |`,
    `| the map page in Chromium: first draw of the whole dataset, points drawn of the points, console errors | ${show(mapPage.first_draw_ms, ' ms')}, ${show(mapPage.drawn)} of ${show(mapPage.points)}, ${show(mapPage.console_errors)} | | | | ${verdict('map page')} |`
  ]
  console.log([`| ${label} placemarks (${CONNECTIONS} connections, ${timing().turns} turns of ${timing().turnSeconds} s) | ours, box index | ours, database path | PostGIS peer | ratio to the peer | target | result |`, '|---|---|---|---|---|---|---|', ...rows].join('\n'))
  // Targeted figures the table does not show (the other sizes' names never reach here).
  const shown = new Set(['bbox, database path', 'start to ready', 'server RSS after load', 'import', 'tiles cold, box index', 'tiles cached, box index', 'tiles cold, one map client', 'tiles cached, one map client', 'RSS added by the tiles', 'map page'].map((n) => `${n} (${label})`))
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
