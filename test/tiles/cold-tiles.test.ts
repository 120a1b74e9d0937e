/**
 * Cold tiles on a dataset of some size: one client asking for many distinct low-zoom tiles at once has
 * at most TILE_CONCURRENCY_PER_CLIENT of them computed at a time, a bounded line waiting and the rest
 * refused 503, while another client's cold tile is answered as soon as it asks; through the real server
 * (a process of its own), clients told apart by their loopback addresses.
 */
import t from 'tap'
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, openTestDatabase, testSecrets } from '../helper.ts'
import { sql } from '../../db/kysely.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { generateKml } from '../../scripts/generate-kml.ts'
import { until } from '../support/shared-state.ts'
import { startServer } from '../support/run.ts'
import { TILE_BUSY_MESSAGE, TILE_WAITING_PER_CLIENT } from '../../plugins/app/tiles.ts'
import { tileOf } from '../../lib/geo/tiles.ts'

// Enough placemarks for a low-zoom tile to cost milliseconds of CPU, few enough to import in a second or two.
const COUNT = 5000
const PER_CLIENT = 2
// Past the client's turns and its line, so that some are refused.
const FLOOD = 120

interface Answer { status: number; headers: IncomingHttpHeaders; body: string; at: number }

/** The tile of zoom z holding a lon/lat (XYZ, rows from the north). */
function tileAt (lon: number, lat: number, z: number): [number, number] {
  const { x, y } = tileOf(lon, lat, z)!
  return [x, y]
}

t.test(`one client's ${FLOOD} cold tiles at once: ${PER_CLIENT} computed at a time, the rest wait or are refused, another client's tile comes at once`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cold-tiles-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'generated.kml')
  await generateKml(file, COUNT)
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, createReadStream(file), { timeZone: 'UTC', source: 'generated.kml' })
  const port = await freePort()
  const server = await startServer(t, {
    ...testSecrets,
    DATABASE_URL: handle.url,
    HOST: '127.0.0.1',
    PORT: String(port),
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    RATE_LIMIT_MAX: '100000',
    TILE_CONCURRENCY_PER_CLIENT: String(PER_CLIENT)
  }, /serving on/)
  // Its request log is not read past the start-up line, and must not fill the pipe.
  server.child.stdout!.resume()

  // Each client is a loopback address of its own, with keep-alive connections as browsers keep them.
  const client = (address: string, sockets: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: sockets })
    t.teardown(() => agent.destroy())
    return (path: string) => new Promise<Answer>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, localAddress: address, agent }, (res) => {
        let body = ''
        res.setEncoding('latin1')
        res.on('data', (d: string) => { body += d })
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, at: Date.now() }))
      })
      req.on('error', reject)
      req.end()
    })
  }
  const flooder = client('127.0.0.2', FLOOD)
  const other = client('127.0.0.3', 1)
  const operator = client('127.0.0.1', 1)
  const metric = async (name: string) => {
    const line = (await operator('/metrics')).body.split('\n').find((l) => l.startsWith(`${name} `))
    return line === undefined ? NaN : Number(line.split(' ')[1])
  }
  t.ok(await until(async () => JSON.parse((await operator('/health')).body).box_index === 'ready', 60_000) >= 0, 'the box index is loaded')

  // Distinct tiles around the data's cities (the generated file's top-level folders), lowest zooms first.
  const { rows: cities } = await sql<{ lon: number; lat: number }>`
    SELECT avg(min_lon)::float8 AS lon, avg(min_lat)::float8 AS lat FROM placemarks GROUP BY folder_path[1]`.execute(handle.db)
  const tiles = new Set<string>()
  for (let z = 2; z <= 12; z++) {
    for (const { lon, lat } of cities) {
      for (const [dx, dy] of [[-0.25, -0.25], [0.25, 0.25], [-0.25, 0.25], [0.25, -0.25]] as const) {
        const [x, y] = tileAt(lon + dx, lat + dy, z)
        tiles.add(`/api/v1/tiles/${z}/${x}/${y}.mvt`)
      }
    }
  }
  const flood = [...tiles].slice(0, FLOOD)
  t.equal(flood.length, FLOOD, `${FLOOD} distinct tiles of zooms 2 and up`)
  const [bx, by] = tileAt(cities[0]!.lon, cities[0]!.lat, 14)
  const otherTile = `/api/v1/tiles/14/${bx}/${by}.mvt`

  // The connections are opened first (a cached answer on each), so the flood's requests arrive together.
  const warm = await Promise.all([...flood.map(() => flooder('/api/v1/tiles.json')), other('/api/v1/tiles.json')])
  t.ok(warm.every((a) => a.status === 200), 'the clients are connected')

  const answers: Answer[] = []
  const all = Promise.all(flood.map((path) => flooder(path).then((a) => { answers.push(a); return a })))
  // Scraped while the flood runs: never more under way than the flooding client's turns, and the other's one.
  const scraping = { on: true }
  let scrapedMost = 0
  let scrapedWaiting = 0
  const scraper = (async () => {
    while (scraping.on) {
      scrapedMost = Math.max(scrapedMost, await metric('tile_requests{state="active"}'))
      scrapedWaiting = Math.max(scrapedWaiting, await metric('tile_requests{state="waiting"}'))
    }
  })()

  // The other client asks once the flood is being computed.
  t.ok(await until(async () => answers.some((a) => a.status !== 503), 30_000) >= 0, 'the flood is under way')
  const asked = Date.now()
  const cold = await other(otherTile)
  const cached = await other('/api/v1/tiles.json')
  const flooded = await all
  scraping.on = false
  await scraper

  t.ok(cold.status === 200 || cold.status === 204, `the other client's cold tile: ${cold.status}`)
  t.equal(cached.status, 200, 'and a cached answer')
  const computed = flooded.filter((a) => a.status === 200 || a.status === 204)
  const refused = flooded.filter((a) => a.status === 503)
  t.equal(computed.length + refused.length, FLOOD, 'every flood request answered: a tile, or 503')
  // While the other client waited, the flood's tiles went on being computed, a turn at a time.
  const meanwhile = computed.filter((a) => a.at > asked && a.at <= cold.at).length
  const after = computed.filter((a) => a.at > cold.at).length
  t.ok(meanwhile <= 2 * PER_CLIENT + 2, `the other client's cold tile came in ${cold.at - asked} ms, with ${meanwhile} of the flood's tiles meanwhile (${after} after it)`)
  t.ok(after > meanwhile, 'most of the flood came after it')

  t.ok(scrapedMost > 0 && scrapedMost <= PER_CLIENT + 1, `active tile requests up to ${scrapedMost}, never past the flooding client's ${PER_CLIENT} turns and the other's one`)
  t.ok(scrapedWaiting > 0 && scrapedWaiting <= TILE_WAITING_PER_CLIENT, `waiting up to ${scrapedWaiting}, within ${TILE_WAITING_PER_CLIENT}`)
  t.ok(refused.length > 0 && refused.length <= FLOOD - PER_CLIENT - TILE_WAITING_PER_CLIENT, `${refused.length} refused: past the client's turns and its line`)
  for (const a of refused.slice(0, 3)) {
    t.equal(a.headers['retry-after'], '1')
    t.same(JSON.parse(a.body), { error: 'Service Unavailable', message: TILE_BUSY_MESSAGE })
  }
  t.equal(await metric('tile_requests_refused_total'), refused.length, 'each refusal counted')
  t.equal(await metric('tile_requests{state="waiting"}'), 0, 'nothing left waiting')
  t.equal(await metric('tile_requests{state="active"}'), 0, 'nothing left under way')
  // Turns are the client's own: once its tiles are answered, its next ones are computed again.
  t.not((await flooder(flood[flood.length - 1]!)).status, 503, 'the flooding client is served again')
})
