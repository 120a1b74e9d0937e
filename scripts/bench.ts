// `npm run bench`: its options and --help, then the run they ask for. Each kind of measurement is a file of
// bench/: the load runs and the small answers against the peers (bench/api.ts), the guild analytics
// (bench/analytics.ts), the bench at scale against PostGIS (bench/scale-run.ts) and the per-piece cost
// table (bench/overhead.ts, in a process of its own).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { CliError, defineCommand, runAsProgram } from '../commands/cli.ts'
import { parseScale } from '../bench/scale.ts'
import { adminUrl, configure } from '../bench/report.ts'
import { LOADER, root } from '../bench/processes.ts'
import { main } from '../bench/api.ts'
import { mainScale } from '../bench/scale-run.ts'

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
               KML driver (1.4 GB at 1m), about 3 GB of disk for the KML alone, and, where the default
               BBOX_INDEX_MB holds its 1.9 GB index (8 GiB of memory or more), some 5 minutes for each
               server's index to load and 2.2 GB of RSS in that server
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
  configure({ quick: values.quick ?? false, small: values.small ?? false, analytics: values.analytics ?? false, events, keep: values.keep ?? false, nodes: values.node }, io.env.BENCH_DATABASE_URL ?? adminUrl)
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

await runAsProgram(command, import.meta.url)
