/**
 * Start-up work that keeps Node 20's `process.nextTick` on V8's fast path for the life of the process.
 *
 * Every answer schedules a few ticks inside Node (the request stream's end, the write callback, the
 * socket's resume), and each tick is an object literal with two computed symbol keys. On Node 20 (V8
 * 11.3), in a Fastify server with a pino logger (any logger: the same server without one never showed
 * it), those literals were defined through V8's runtime on every tick (`Runtime_DefineKeyedOwnPropertyInLiteral`
 * and map migrations under `endReadable`, `onwrite`, `resume`): 10–16 % of the server's CPU under load
 * in `perf`, against 4.5 % of such slow paths on bare Fastify. Scheduling a few thousand empty ticks
 * before the server is built lets V8 optimize `nextTick` first: the app's server started this way never
 * showed the slow path again (3,000 were enough, 2,000 were not; 10,000 leave a margin and take about
 * 5 ms). It makes the slow path rare, not impossible: thirteen servers started at once on one core (the
 * cost table's set-up) still fell into it. Node 24 shows no such slow path, with or without it; Node 22
 * is outside the supported engines and was not measured.
 *
 * Same machine, CPU per request under load, alternated runs: one small JSON route with the app's server
 * options 15.7 µs without, 12.8 µs with (bare Fastify 11.5); the whole app's cached `GET /api/v1/stats`
 * 22.9 µs without, 20.3 µs with (42,600 → 47,100 req/s, six pairs). docs/performance.md has the runs.
 */
const WARM_UP_TICKS = 10_000

/** Whether this Node's V8 is one the warm-up is for (Node 20, and 21 with the same V8 line). */
export function needsNextTickWarmUp (version: string = process.versions.node): boolean {
  return Number(version.split('.')[0]) < 22
}

const noop = () => {}

/** Schedules the empty ticks and resolves once they have run; nothing to do on Node 22 and later. */
export async function warmUpNextTick (ticks: number = WARM_UP_TICKS, version?: string): Promise<number> {
  if (!needsNextTickWarmUp(version)) return 0
  for (let i = 0; i < ticks; i++) process.nextTick(noop)
  await new Promise((resolve) => setImmediate(resolve))
  return ticks
}
