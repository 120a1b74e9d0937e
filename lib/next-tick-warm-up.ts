/**
 * Start-up work that keeps Node 20's `process.nextTick` on V8's fast path for the life of the process.
 *
 * Every answer schedules a few ticks inside Node (the request stream's end, the write callback, the
 * socket's resume), and each tick is an object literal with two computed symbol keys. On Node 20 (V8
 * 11.3), in a server whose first ticks come from the logger and the plugins as they load, those literals
 * ended up defined through V8's runtime for every tick (`Runtime_DefineKeyedOwnPropertyInLiteral` and
 * map migrations under `endReadable`, `onwrite`, `resume`): 10–16 % of the server's CPU under load in
 * `perf`. Scheduling a few thousand empty ticks before anything else lets V8 optimize `nextTick` with
 * clean feedback first, and the slow path never appears (measured: 3,000 are enough at process start,
 * 2,000 are not; 10,000 leave a margin and take about 5 ms). Node 22 and later do not need it.
 *
 * Same machine, one small JSON route with the app's server options, CPU per request under load: 15.1 µs
 * without, 12.8 µs with (bare Fastify 11.5); the whole app's cached `GET /api/v1/stats`: 24.1 → 22.4 µs,
 * 39,300 → 42,500 req/s. docs/performance.md has the runs.
 */
export const WARM_UP_TICKS = 10_000

/** Whether this Node's V8 needs the warm-up (Node 20 and 21). */
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
