// The load generator (autocannon) and what it asks: one URL, or unique random city boxes; the bytes of
// one GET as the load gets them; a figure of req/s, p50 and p99 from one run.

import { request as httpRequest } from 'node:http'
import autocannon from 'autocannon'
import { mulberry32 } from '../scripts/generate-kml.ts'
import { CONNECTIONS, log, results, timing } from './report.ts'

// A server under load; with its pid, its CPU time is read around each of its turns.
export interface Side { name: string; base: string; pid?: number }

export async function load (url: string, opts: { requests?: autocannon.Request[]; headers?: Record<string, string>; connections?: number; duration?: number } = {}) {
  // Sampled every 100 ms: autocannon stops at the first sample after the duration, so a half-second turn
  // lasts half a second, not a whole one (the figures are over its actual length).
  const r = await autocannon({ url, connections: opts.connections ?? CONNECTIONS, duration: opts.duration ?? timing().duration, headers: opts.headers, requests: opts.requests, sampleInt: 100 })
  // Requests over the run's actual length: autocannon's average is over whole-second samples.
  return { requests: r.requests.total, seconds: r.duration, rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors + r.timeouts }
}

// A GET with autocannon's headers (no accept-encoding), so the bytes kept are the bytes the load gets.
export function getBytes (url: string, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string; body: Buffer; rawHeaders: string[] }> {
  return new Promise((resolve, reject) => {
    const [done, fail] = [resolve, reject]
    httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => done({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks), rawHeaders: res.rawHeaders }))
    }).on('error', fail).end()
  })
}

export function record (name: string, r: Awaited<ReturnType<typeof load>>) {
  results.figures[name] = { rps: Math.round(r.rps), p50_ms: r.p50, p99_ms: r.p99, non2xx: r.non2xx }
  log(`  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`)
}

// Unique random city-sized boxes for every request: the benchmark measures the index, not a cache.
// The same seed gives every server the same boxes in the same order.
export function cityBoxPaths (): string[] {
  const rand = mulberry32(42)
  const cities: [number, number][] = [[-115.17, 36.11], [-118.24, 34.05], [-74.0, 40.71], [-0.12, 51.5], [2.35, 48.86], [139.69, 35.69]]
  return Array.from({ length: 200_000 }, () => {
    const [lon, lat] = cities[Math.floor(rand() * cities.length)]
    const x = lon + (rand() - 0.5) * 0.5
    const y = lat + (rand() - 0.5) * 0.5
    return `/api/v1/spatial/bbox?min_lon=${(x - 0.02).toFixed(4)}&min_lat=${(y - 0.02).toFixed(4)}&max_lon=${(x + 0.02).toFixed(4)}&max_lat=${(y + 0.02).toFixed(4)}&limit=100`
  })
}

// Requests that take the boxes one after the other, each list of requests from the first box.
export function randomBoxes (boxes: string[] = cityBoxPaths()): autocannon.Request[] {
  let next = 0
  return [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: boxes[next++ % boxes.length] }) }]
}
