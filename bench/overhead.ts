/**
 * The throughput cost of metrics, security headers and load shedding: the server (server.ts, a child
 * process on the embedded database with the sample data) is loaded by autocannon on a cached route with
 * the three on (the defaults) and off (METRICS=false SECURITY_HEADERS=false MAX_EVENT_LOOP_DELAY_MS=0
 * MAX_HEAP_USED_BYTES=0), alternately, and requests/s are printed for each run.
 *
 *   node --import tsx bench/overhead.ts [seconds=10] [rounds=2] [path=/api/v1/stats]
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { freePort, projectRoot } from '../test/helper.ts'

const seconds = Number(process.argv[2] ?? 10)
const rounds = Number(process.argv[3] ?? 2)
const path = process.argv[4] ?? '/api/v1/stats'

const variants: Record<string, Record<string, string>> = {
  on: {},
  off: { METRICS: 'false', SECURITY_HEADERS: 'false', MAX_EVENT_LOOP_DELAY_MS: '0', MAX_HEAP_USED_BYTES: '0' }
}

async function run(name: string): Promise<number> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'server.ts')], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH, NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: String(port), HOST: '127.0.0.1',
      PGLITE_DIR: 'memory://', RATE_LIMIT_MAX: '1000000000', ...variants[name]
    },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  try {
    const base = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/health/ready`).then((r) => r.ok, () => false)
      if (ok) break
      if (i > 600) throw new Error(`${name}: the server did not become ready`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    // Warm-up: the cache entry, the JIT.
    await autocannon({ url: `${base}${path}`, connections: 50, duration: 2 })
    const result = await autocannon({ url: `${base}${path}`, connections: 50, duration: seconds })
    if (result.non2xx || result.errors) throw new Error(`${name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
    console.log(`${name.padEnd(3)}  ${Math.round(result.requests.average)} req/s  (p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result.requests.total} requests)`)
    return result.requests.average
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

const totals: Record<string, number[]> = { on: [], off: [] }
for (let round = 0; round < rounds; round++) {
  for (const name of round % 2 ? ['off', 'on'] : ['on', 'off']) totals[name]!.push(await run(name))
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const on = mean(totals.on!)
const off = mean(totals.off!)
console.log(`mean: on ${Math.round(on)} req/s, off ${Math.round(off)} req/s: the plugins cost ${((1 - on / off) * 100).toFixed(1)} %`)
