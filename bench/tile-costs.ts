// The cold tiles of a running server, tile by tile: the bench's random tiles (`--scale`'s, around random
// placemarks of its database) asked one at a time, each once, the time to its last byte and its size by
// zoom; or, with `load`, all of them as `--scale` asks them (each once, at its connections), p50 and p99.
// Usage (the server started on DATABASE_URL, nothing asked of it yet):
//   node --import ./scripts/typescript.mjs bench/tile-costs.ts <base URL> <DATABASE_URL> [load]
import { tilePath } from './scale.ts'
import { benchTiles, loadTiles } from './scale-run.ts'
import { CONNECTIONS } from './report.ts'

const [base, url, mode] = process.argv.slice(2)
const { tiles } = await benchTiles(url)
if (mode === 'load') {
  const run = await loadTiles(base, tiles.map(tilePath), { amount: tiles.length })
  console.log(`${tiles.length} tiles at ${CONNECTIONS} connections: ${Math.round(run.rps)} tiles/s, p50 ${run.p50_ms} ms, p99 ${run.p99_ms} ms, max ${run.max_ms} ms`)
  process.exit(0)
}
const byZoom = new Map<number, { ms: number[]; bytes: number }>()
for (const t of tiles) {
  const at = performance.now()
  const res = await fetch(`${base}${tilePath(t)}`, { headers: { 'accept-encoding': 'identity' } })
  const body = Buffer.from(await res.arrayBuffer())
  const z = byZoom.get(t.z) ?? { ms: [], bytes: 0 }
  z.ms.push(performance.now() - at)
  z.bytes += body.length
  byZoom.set(t.z, z)
}
const at = (a: number[], q: number) => a.sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))].toFixed(1)
const mean = (a: number[]) => (a.reduce((x, y) => x + y, 0) / a.length).toFixed(1)
for (const [z, v] of [...byZoom.entries()].sort((a, b) => a[0] - b[0])) {
  console.log(`z${z}\t${v.ms.length} tiles\tmean ${mean(v.ms)} ms\tp50 ${at(v.ms, 0.5)}\tmax ${at(v.ms, 1)}\tmean ${Math.round(v.bytes / v.ms.length / 1024)} KiB`)
}
const all = [...byZoom.values()].flatMap((v) => v.ms)
console.log(`all\t${all.length} tiles\tmean ${mean(all)} ms`)
