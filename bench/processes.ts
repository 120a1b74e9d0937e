// The processes a run of the bench starts: our server (in development for the load runs, in production at
// scale), the peers and the scripts it times; their CPU time and memory from /proc, the wait until they and
// the database are idle, and their end.

import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { once } from 'node:events'
import { createServer as createNetServer } from 'node:net'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import type pg from 'pg'
import { freePort } from '../lib/free-port.ts'
import { procMemory } from './scale.ts'
import { log } from './report.ts'

export const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
// Every process runs the TypeScript sources as `npm start` and the other npm scripts do (scripts/typescript.mjs).
export const LOADER = './scripts/typescript.mjs'
const { scripts } = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
// The Node options an npm script gives its program (package.json's script, before its loader).
const scriptOptions = (name: string): string[] =>
  scripts[name].split(/\s+/).slice(1).filter((arg, k, args) => arg.startsWith('--') && k < args.indexOf('--import'))
// `npm start`'s: our servers run with them, as production does; the peers run as their users would start them.
export const START_OPTIONS = scriptOptions('start')
// `npm run import`'s: the bench's import is that command.
export const IMPORT_OPTIONS = scriptOptions('import')

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The children of a run that cleans up after itself (--scale): none is started once it has stopped.
export interface Tracker { children: Set<ChildProcess>; stopped: boolean }

export function tracked<C extends ChildProcess> (track: Tracker | undefined, child: C): C {
  if (!track) return child
  track.children.add(child)
  child.once('exit', () => track.children.delete(child))
  return child
}

export function run (cmd: string, args: string[], env: Record<string, string>, onStderr?: (text: string) => void, track?: Tracker): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  const started = performance.now()
  if (track?.stopped) return Promise.reject(new Error('interrupted'))
  return new Promise((resolve) => {
    const done = resolve
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    tracked(track, child)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d; onStderr?.(String(d)) })
    // A command that is not installed: no exit code, the reason in stderr.
    child.on('error', (err) => done({ code: null, stdout, stderr: stderr + err.message, seconds: (performance.now() - started) / 1000 }))
    child.on('close', (code) => done({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 }))
  })
}

// Starts a Node child and waits for the stdout line that says it is ready; returns what `ready` took from it.
export async function startProcess (args: string[], ready: (line: string) => string | null, node = process.execPath): Promise<{ child: ChildProcess; value: string }> {
  const child = spawn(node, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
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

export async function stop (child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

// CPU seconds a process has used so far (Linux), or null where /proc is not there.
export function cpuSeconds (pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
}

// Resident and peak memory of a process in MB (Linux), from /proc.
export function memoryMb (pid: number): { rss_mb: number; peak_rss_mb: number } | null {
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
export async function settle (pid: number) {
  const started = Date.now()
  let last = cpuSeconds(pid)
  while (last !== null && Date.now() - started < 300_000) {
    await sleep(1000)
    const now = cpuSeconds(pid)
    if (now === null || now - last < 0.05) return
    last = now
  }
}

/**
 * A process's RSS once it holds steady: sampled every second until it has moved less than 1 MiB over
 * five seconds (at most a minute). Node 24 gave back the pages of a worker thread that had exited some
 * seconds later, and the heap's own settle after a load: a reading right after it may count memory the
 * process no longer holds.
 */
export async function steadyMemory (child: ChildProcess): Promise<{ rss_mib: number; peak_rss_mib: number } | null> {
  const samples: number[] = []
  const started = Date.now()
  for (;;) {
    const m = processMemory(child)
    if (m === null) return null
    samples.push(m.rss_mib)
    const n = samples.length
    if ((n > 5 && Math.abs(samples[n - 1] - samples[n - 6]) < 1) || Date.now() - started > 60_000) return m
    await sleep(1000)
  }
}

// Autovacuum after the bulk loads would take a core from the measurements: wait until it is done.
export async function quiesce (admin: pg.Client, dbName: string) {
  const started = Date.now()
  while (Date.now() - started < 300_000) {
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND (backend_type = \'autovacuum worker\' OR query ILIKE \'vacuum%\' OR query ILIKE \'analyze%\')', [dbName])
    if (rows[0].n === 0) return
    await sleep(1000)
  }
  log('  autovacuum still running after 5 minutes; measuring anyway')
}

// Whether this machine can listen on the IPv6 loopback (a container may have IPv6 off).
async function hasIpv6Loopback (): Promise<boolean> {
  const probe = createNetServer()
  try {
    probe.listen(0, '::1')
    await once(probe, 'listening')
    return true
  } catch {
    return false
  } finally {
    probe.close()
  }
}

// The server under test, with limits out of the way of the load generator; stderr shown so a crash is visible.
export async function startServer (DATABASE_URL: string, env: Record<string, string> = {}, node = process.execPath): Promise<{ child: ChildProcess; base: string; ipv6Base: string | null }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // On :: when the machine has IPv6 (as many deployments listen): IPv4 clients then arrive mapped into IPv6.
  const ipv6 = await hasIpv6Loopback()
  const child = spawn(node, [...START_OPTIONS, '--import', LOADER, 'server.ts'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DATABASE_URL, PORT: String(port), HOST: ipv6 ? '::' : '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'development', RATE_LIMIT_MAX: '100000000', AUTH_RATE_LIMIT_MAX: '100000000', API_KEY_RATE_LIMIT_MAX: '100000000', SIGNIN_MAX_FAILURES: '1000000', DB_POOL_MAX: '20', JWT_SECRET: 'bench-access-secret-0123456789abcdefghijklmnop', JWT_REFRESH_SECRET: 'bench-refresh-secret-0123456789abcdefghijklmn', ...env }
  })
  for (let i = 0; i < 120; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with code ${child.exitCode} before answering /health`)
    try { if ((await fetch(`${base}/health`)).ok) return { child, base, ipv6Base: ipv6 ? `http://[::1]:${port}` : null } } catch { /* not up yet */ }
    await sleep(500)
  }
  child.kill('SIGTERM')
  throw new Error('the server did not answer /health within 60 s')
}

interface Measured { code: number | null; stdout: string; stderr: string; seconds: number; peakRssMib: number | null }

/**
 * Runs a command to its end with its wall time and its peak RSS, read from /proc/<pid>/status (VmHWM,
 * which only grows) every 50 ms while it runs; null where /proc is not there.
 */
export function runMeasured (cmd: string, args: string[], env: Record<string, string>, track: Tracker): Promise<Measured> {
  const started = performance.now()
  if (track.stopped) return Promise.reject(new Error('interrupted'))
  return new Promise((resolve) => {
    const done = resolve
    const child = tracked(track, spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }))
    let stdout = ''
    let stderr = ''
    let peak: number | null = null
    const sample = () => {
      if (!child.pid) return
      try {
        const m = procMemory(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        if (m) peak = Math.max(peak ?? 0, m.peak_rss_mib)
      } catch { /* exited, or no /proc */ }
    }
    const timer = setInterval(sample, 50)
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('error', (err) => { stderr += String(err.message) })
    child.on('close', (code) => {
      clearInterval(timer)
      done({ code, stdout, stderr, seconds: (performance.now() - started) / 1000, peakRssMib: peak })
    })
  })
}

// The production settings of a server under test: the defaults, a few required values (the identity
// provider is never called), and the rate limits out of the load generator's way.
const productionEnv = (port: number): Record<string, string> => ({
  NODE_ENV: 'production',
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  PUBLIC_URL: `http://127.0.0.1:${port}`,
  IDP_CLIENT_ID: 'bench',
  IDP_CLIENT_SECRET: 'bench',
  IDP_REDIRECT_URI: `http://127.0.0.1:${port}/api/auth/callback`,
  IDP_AUTHORIZE_URL: 'http://127.0.0.1:9/authorize',
  IDP_TOKEN_URL: 'http://127.0.0.1:9/token',
  IDP_USER_URL: 'http://127.0.0.1:9/user',
  IDP_GUILDS_URL: 'http://127.0.0.1:9/guilds',
  JWT_SECRET: 'bench-access-secret-0123456789abcdefghijklmnop',
  JWT_REFRESH_SECRET: 'bench-refresh-secret-0123456789abcdefghijklmn',
  RATE_LIMIT_MAX: '100000000',
  AUTH_RATE_LIMIT_MAX: '100000000'
})

export interface Server { name: string; base: string; child: ChildProcess; readySeconds: number }

/** Starts our server in production and times spawn to the first 200 of /health/ready (polled every 20 ms). */
export async function startProductionServer (name: string, DATABASE_URL: string, env: Record<string, string>, track: Tracker): Promise<Server> {
  if (track.stopped) throw new Error('interrupted')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const child = tracked(track, spawn(process.execPath, [...START_OPTIONS, '--import', LOADER, 'server.ts'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DATABASE_URL, ...productionEnv(port), ...env } }))
  while (performance.now() - started < 600_000) {
    if (child.exitCode !== null) throw new Error(`${name}: the server exited with code ${child.exitCode} before it was ready`)
    try { if ((await fetch(`${base}/health/ready`)).status === 200) return { name, base, child, readySeconds: (performance.now() - started) / 1000 } } catch { /* not up yet */ }
    await sleep(20)
  }
  throw new Error(`${name}: /health/ready did not answer 200 within 10 minutes`)
}

export function processMemory (child: ChildProcess): { rss_mib: number; peak_rss_mib: number } | null {
  try { return child.pid ? procMemory(readFileSync(`/proc/${child.pid}/status`, 'utf8')) : null } catch { return null }
}
