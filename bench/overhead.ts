/**
 * What each piece of the request path costs: server CPU per request (user + system time of the server
 * process over its turn, divided by the requests it answered) for a base server answering one small JSON
 * route, the same with each piece on alone, with all of them, the whole app on its cached stats route
 * (production defaults), and a bare Fastify server sending the same bytes. Every server runs at once in
 * its own process; autocannon loads one at a time in short turns, the order rotating, and each figure is
 * the median of its turns. Prints a Markdown table (the one in docs/performance.md).
 *
 *   node --import ./scripts/typescript.mjs bench/overhead.ts [--turns N] [--seconds S]     (npm run bench -- --overhead)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { projectRoot, typescriptLoader } from '../test/helper.ts'
import { PATH, PIECES } from './overhead-server.ts'

const { values } = parseArgs({ options: { turns: { type: 'string', default: '5' }, seconds: { type: 'string', default: '2' }, only: { type: 'string' }, extra: { type: 'string' } } })
const TURNS = Number(values.turns)
const SECONDS = Number(values.seconds)
const CONNECTIONS = 32

interface Variant { name: string; args: string[]; path: string; why?: string }

const variants: Variant[] = [
  { name: 'bare Fastify (peer)', args: ['fastify'], path: PATH },
  { name: 'base: the app\'s server options and error contract', args: ['pieces'], path: PATH },
  ...PIECES.map((piece) => ({ name: `+ ${piece}`, args: ['pieces', piece], path: PATH })),
  { name: 'all pieces together', args: ['pieces', ...PIECES], path: PATH },
  { name: 'the whole app, GET /api/v1/stats (cached)', args: ['app'], path: '/api/v1/stats' }
]

// --extra a,b: more variants by their server arguments (experiments); --only 1,2: the variants at these positions.
for (const extra of values.extra?.split(',') ?? []) variants.push({ name: extra, args: extra.split(' '), path: PATH })
if (values.only) {
  const keep = new Set(values.only.split(',').map(Number))
  for (let i = variants.length - 1; i >= 0; i--) if (!keep.has(i)) variants.splice(i, 1)
}

interface Running { variant: Variant; child: ChildProcess; base: string; token?: string; user: number[]; system: number[]; rps: number[] }

async function start (variant: Variant): Promise<Running> {
  // With two cores or more, the servers run on one and the load generator on another, so that neither
  // steals the other's time slices and each turn measures the server alone.
  const args = ['--import', typescriptLoader, join(projectRoot, 'bench', 'overhead-server.ts'), ...variant.args]
  const child = spawn(pinned ? 'taskset' : process.execPath, pinned ? ['-c', '1', process.execPath, ...args] : args, {
    cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'], env: { PATH: process.env.PATH }
  })
  const lines = createInterface({ input: child.stdout! })
  const [line] = await Promise.race([once(lines, 'line'), once(lines, 'close').then(() => { throw new Error(`${variant.name}: the server exited before listening`) })]) as [string]
  const { port, token } = JSON.parse(line) as { port: number; token?: string }
  return { variant, child, base: `http://127.0.0.1:${port}`, token, user: [], system: [], rps: [] }
}

// CPU seconds a process has used so far in user and system time, from /proc.
function cpuSeconds (pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

async function turn (server: Running, seconds: number): Promise<{ user: number; system: number; rps: number }> {
  const headers = server.token ? { authorization: `Bearer ${server.token}` } : undefined
  const before = cpuSeconds(server.child.pid!)
  const result = await autocannon({ url: server.base + server.variant.path, connections: CONNECTIONS, duration: seconds, headers })
  const after = cpuSeconds(server.child.pid!)
  if (result.non2xx || result.errors) throw new Error(`${server.variant.name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
  const n = result.requests.total
  return { user: ((after.user - before.user) * 1e6) / n, system: ((after.system - before.system) * 1e6) / n, rps: n / result.duration }
}

const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' }).status === 0

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const servers: Running[] = []
try {
  for (const variant of variants) servers.push(await start(variant))
  // Warm-up: the JIT, the cache entry.
  for (const server of servers) await turn(server, 1)
  for (let t = 0; t < TURNS; t++) {
    for (let k = 0; k < servers.length; k++) {
      const server = servers[(t + k) % servers.length]!
      const { user, system, rps } = await turn(server, SECONDS)
      server.user.push(user)
      server.system.push(system)
      server.rps.push(rps)
    }
    process.stderr.write(`turn ${t + 1} of ${TURNS}\n`)
  }
  // A figure's turns are its samples: the median of user + system, and of each.
  const total = (s: Running) => median(s.user.map((u, i) => u + s.system[i]!))
  const baseServer = servers.find((s) => s.variant.args.join(' ') === 'pieces')
  const base = baseServer ? total(baseServer) : NaN
  const rows = servers.map((s) => {
    const us = total(s)
    const delta = s.variant.args[0] === 'pieces' && s.variant.args.length === 2 ? `${(us - base) >= 0 ? '+' : ''}${(us - base).toFixed(1)}` : ''
    return `| ${s.variant.name} | ${us.toFixed(1)} | ${median(s.user).toFixed(1)} | ${median(s.system).toFixed(1)} | ${delta} | ${Math.round(median(s.rps))} |`
  })
  console.log([`| server (${CONNECTIONS} connections, ${TURNS} turns of ${SECONDS} s, medians) | CPU µs per request | user | system | cost of the piece | req/s |`, '|---|---|---|---|---|---|', ...rows].join('\n'))
} finally {
  for (const server of servers) server.child.kill('SIGTERM')
}
