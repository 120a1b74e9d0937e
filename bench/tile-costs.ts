// The cold tiles of a running server, tile by tile: the bench's random tiles (bench/scale.ts, around
// random placemarks of its database) asked one at a time, each once, the time to its last byte and its
// size by zoom; or, with a number of connections, all of them at once as --scale asks them (each once,
// autocannon), p50 and p99. Usage (the server started on DATABASE_URL, nothing asked of it yet):
//   node --import ./scripts/typescript.mjs bench/tile-costs.ts <base URL> <DATABASE_URL> [connections]
import pg from 'pg'
import autocannon from 'autocannon'
import { mulberry32 } from '../scripts/generate-kml.ts'
import { randomTiles, tilePath } from './scale.ts'

const [base, url, connections] = process.argv.slice(2)
const client = new pg.Client({ connectionString: url })
await client.connect()
const { rows: [range] } = await client.query<{ lo: number; hi: number }>('SELECT min(id)::int AS lo, max(id)::int AS hi FROM placemarks')
const rand = mulberry32(11)
const ids = Array.from({ length: 2000 }, () => range.lo + Math.floor(rand() * (range.hi - range.lo + 1)))
const { rows } = await client.query<{ id: number; min_lon: number; min_lat: number }>('SELECT id, min_lon, min_lat FROM placemarks WHERE id = ANY($1::int[])', [ids])
await client.end()
const byId = new Map(rows.map((r) => [r.id, [r.min_lon, r.min_lat] as [number, number]]))
const tiles = randomTiles(ids.map((id) => byId.get(id)).filter((p) => p !== undefined), mulberry32(12))
if (connections !== undefined) {
  const paths = tiles.map(tilePath)
  let next = 0
  const latencies: number[] = []
  const run = await new Promise<autocannon.Result>((resolve, reject) => {
    const requests = [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[next++] }) }]
    const instance = autocannon({ url: base, connections: Number(connections), amount: paths.length, requests }, (err, r) => (err ? reject(err) : resolve(r)))
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms))
  })
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1)
  console.log(`${paths.length} tiles at ${connections} connections: ${Math.round(run.requests.total / run.duration)} tiles/s, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`)
  process.exit(0)
}
const byZoom = new Map<number, { n: number; ms: number[]; bytes: number }>()
for (const t of tiles) {
  const at = performance.now()
  const res = await fetch(`${base}${tilePath(t)}`, { headers: { 'accept-encoding': 'identity' } })
  const body = Buffer.from(await res.arrayBuffer())
  const ms = performance.now() - at
  const z = byZoom.get(t.z) ?? { n: 0, ms: [], bytes: 0 }
  z.n++
  z.ms.push(ms)
  z.bytes += body.length
  byZoom.set(t.z, z)
}
const p = (a: number[], q: number) => a.sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))]
for (const [z, v] of [...byZoom.entries()].sort((a, b) => a[0] - b[0])) {
  console.log(`z${z}\t${v.n} tiles\tmean ${(v.ms.reduce((a, b) => a + b, 0) / v.n).toFixed(1)} ms\tp50 ${p(v.ms, 0.5).toFixed(1)}\tmax ${p(v.ms, 1).toFixed(1)}\tmean ${Math.round(v.bytes / v.n / 1024)} KiB`)
}
const all = [...byZoom.values()].flatMap((v) => v.ms)
console.log(`all\t${all.length} tiles\tmean ${(all.reduce((a, b) => a + b, 0) / all.length).toFixed(1)} ms`)
