// What every run of the bench shares: its options and sizes, the figures it keeps (bench/results.json),
// how they are judged against bench/targets.json, and the table printed at the end.

import { baseName, peerTiming, PEERS } from './peers/sides.ts'

export let cli: { quick: boolean; small: boolean; analytics: boolean; events: number | null; keep: boolean; nodes?: string[] } = { quick: false, small: false, analytics: false, events: null, keep: false }
// --quick measures the peers' figures only; its turns are the small run's.
const small = () => cli.quick || cli.small

export const sizes = () => ({
  placemarks: small() ? 20_000 : 1_000_000,
  events: cli.events ?? (small() ? 200_000 : 10_000_000),
  users: small() ? 2_000 : 100_000,
  // Ingestion through the API: batches sent 4 at a time, then batches sent one at a time.
  ingestBatches: small() ? 20 : 200,
  serialBatches: small() ? 10 : 50
})
export const GUILDS = 100
export const CONNECTIONS = 32
export let adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres'
// Short alternating turns, so that a slow spell of the shared machine (seconds long) falls on every server.
export const timing = () => small()
  ? { duration: 3, warmup: 1, turns: 3, turnSeconds: 1 }
  : { duration: 10, warmup: 3, turns: 5, turnSeconds: 2 }

// Sets the run's options once they parse, and the PostgreSQL server its databases are created on.
export function configure (options: typeof cli, databaseUrl: string) {
  cli = options
  adminUrl = databaseUrl
}

export type Figure = Record<string, number | string>
interface Check { figure: string; target: string; pass: boolean }

export const results = {
  quick: false,
  machine: `${process.platform} ${process.arch}, node ${process.version}`,
  // The Node versions the small answers were measured on (their figures' names say which).
  runtimes: [] as string[],
  at: new Date().toISOString(),
  settings: {} as Record<string, number>,
  figures: {} as Record<string, Figure>,
  checks: [] as Check[]
}

export const log = (msg: string) => process.stderr.write(`${msg}\n`)
export const round2 = (x: number) => Math.round(x * 100) / 100

/**
 * Judges each figure of bench/targets.json: {"at_least": {metric: n}, "below": {metric: n}}. A figure not
 * measured, or with any non-2xx answer, error or timeout, fails: it would measure nothing.
 */
export function checkTargets (targets: Record<string, { at_least?: Record<string, number>; below?: Record<string, number> }>): Check[] {
  return Object.entries(targets).map(([figure, t]) => {
    const f = results.figures[figure]
    const value = (metric: string) => (typeof f?.[metric] === 'number' ? (f[metric] as number) : NaN)
    const atLeast = Object.entries(t.at_least ?? {}).map(([m, n]) => ({ text: `${m} >= ${n}`, ok: value(m) >= n }))
    const below = Object.entries(t.below ?? {}).map(([m, n]) => ({ text: `${m} < ${n}`, ok: value(m) < n }))
    const parts = [...atLeast, ...below]
    return { figure, target: parts.map((p) => p.text).join(', '), pass: f !== undefined && !f.non2xx && parts.every((p) => p.ok) }
  })
}

export function printTables () {
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
