import t from 'tap'
import { boundsOf, intersectsBox, type Box, type Geometry, type Position } from '../../lib/geo/box.ts'
import { BoxIndexBuilder, joinSummaries, type BoxIndex, type SummaryBytes } from '../../lib/geo/box-index.ts'
import { mulberry32 } from '../../lib/random.ts'

// Random geometries and boxes, many of them near the antimeridian and on shared edges, checked
// against the plain per-geometry test: the index must return exactly those, in id order.
const rand = mulberry32(11)
const coord = (lo: number, hi: number) => Math.round((lo + rand() * (hi - lo)) * 100) / 100
const near = (): Position => {
  const lon = rand() < 0.3 ? (rand() < 0.5 ? 180 : -180) - Math.sign(rand() - 0.5) * coord(0, 3) : coord(-20, 20)
  return [Math.max(-180, Math.min(180, lon)), coord(-20, 20)]
}

function randomGeometry (): Geometry {
  const [x, y] = near()
  const r = rand()
  if (r < 0.5) return { type: 'Point', coordinates: [x, y] }
  const step = () => coord(-4, 4)
  if (r < 0.75) return { type: 'LineString', coordinates: [[x, y], [x + step(), y + step()], [x + step(), y + step()]] }
  const w = coord(0.5, 6)
  const ring: Position[] = [[x, y], [x + w, y], [x + w, y + w], [x, y + w], [x, y]]
  const hole: Position[] = [[x + w / 4, y + w / 4], [x + (3 * w) / 4, y + w / 4], [x + (3 * w) / 4, y + (3 * w) / 4], [x + w / 4, y + (3 * w) / 4], [x + w / 4, y + w / 4]]
  return { type: 'Polygon', coordinates: rand() < 0.5 ? [ring, hole] : [ring] }
}

function randomBox (): Box {
  const [x, y] = near()
  const w = rand() < 0.1 ? 0 : coord(0, 8)
  const h = rand() < 0.1 ? 0 : coord(0, 8)
  const maxLon = x + w > 180 ? x + w - 360 : x + w
  return { minLon: x, minLat: y, maxLon, maxLat: Math.min(90, y + h) }
}

const items = Array.from({ length: 3000 }, (_, i) => ({ id: 3 * i + 1, geometry: randomGeometry() }))
// An empty geometry: infinite bounds, never in any box.
items.push({ id: 10_000, geometry: { type: 'LineString', coordinates: [] } })
// An index of the items, stored in the order given.
function indexOf (list: typeof items) {
  const builder = new BoxIndexBuilder()
  for (const { id, geometry } of list) {
    const b = boundsOf(geometry)
    builder.add({ id, minLon: b.minLon, minLat: b.minLat, maxLon: b.maxLon, maxLat: b.maxLat, geometry: JSON.stringify(geometry), json: JSON.stringify({ id }) })
  }
  return builder.finish()
}
const index = indexOf(items)

// The joined bytes as the array of values they serialize.
function values (list: SummaryBytes): unknown[] {
  const bytes = Buffer.alloc(list.byteLength)
  list.copyTo(bytes, 0)
  const parsed = JSON.parse(`[${bytes.toString()}]`) as unknown[]
  if (parsed.length !== list.count) throw new Error(`count ${list.count} but ${parsed.length} values`)
  return parsed
}

/**
 * Asks an index for `boxes` random boxes and compares each answer with the per-geometry test over all
 * items: the first difference, or how many boxes were compared and how many found something.
 */
function compare (ix: BoxIndex, boxes: number, limitOf: () => number): { mismatch: string } | { compared: number; nonEmpty: number } {
  let compared = 0
  let nonEmpty = 0
  for (let k = 0; k < boxes; k++) {
    const box = randomBox()
    const limit = limitOf()
    const expected = items.filter((p) => intersectsBox(p.geometry, box)).slice(0, limit).map((p) => p.id)
    const got = values(ix.search(box, limit)).map((v) => (v as { id: number }).id)
    if (expected.join() !== got.join()) return { mismatch: `box ${JSON.stringify(box)} limit ${limit}: expected ${expected.join()} got ${got.join()}` }
    compared++
    if (got.length) nonEmpty++
  }
  return { compared, nonEmpty }
}

const someLimit = () => (rand() < 0.5 ? 10_000 : 1 + Math.floor(rand() * 20))

t.test('answers exactly what the per-geometry test says, in id order, for 2000 random boxes', async (t) => {
  t.equal(index.size, 3000, 'the empty geometry is left out')
  const result = compare(index, 2000, someLimit)
  if ('mismatch' in result) {
    t.fail(result.mismatch)
    return
  }
  t.equal(result.compared, 2000)
  t.ok(result.nonEmpty > 500, `${result.nonEmpty} boxes found something`)
})

t.test('the stored bytes are the summaries as given, multi-byte text included', async (t) => {
  const b = new BoxIndexBuilder()
  b.add({ id: 1, minLon: 1, minLat: 1, maxLon: 1, maxLat: 1, geometry: '', json: '{"name":"Café ☕"}' })
  b.add({ id: 2, minLon: 2, minLat: 2, maxLon: 2, maxLat: 2, geometry: '', json: '{"name":"plain"}' })
  const small = b.finish()
  t.same(values(small.search({ minLon: 0, minLat: 0, maxLon: 3, maxLat: 3 }, 10)), [{ name: 'Café ☕' }, { name: 'plain' }])
  t.same(values(joinSummaries(['{"a":"é"}', '{"b":2}'])), [{ a: 'é' }, { b: 2 }], 'the database path joins the same way')
  t.ok(small.memoryBytes > 0)
})

t.test("an empty index, entries added in any order, ids outside the table's range", async (t) => {
  t.same(values(new BoxIndexBuilder().finish().search({ minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }, 10)), [])
  // Stored in the order added (the loader adds them in spatial order); answered in id order all the same.
  const shuffled = compare(indexOf(items.slice().sort(() => rand() - 0.5)), 300, () => 40)
  if ('mismatch' in shuffled) t.fail(shuffled.mismatch)
  else t.pass('300 boxes answered in id order')
  // Added cell by cell as the loader adds them (cells of 2° here, each in id order): few runs of ascending ids to merge.
  const cellOf = (g: Geometry) => {
    const b = boundsOf(g)
    return Math.floor((b.minLat + b.maxLat) / 4) * 1000 + Math.floor((b.minLon + b.maxLon) / 4)
  }
  const byCell = compare(indexOf(items.slice(0, -1).sort((p, q) => cellOf(p.geometry) - cellOf(q.geometry) || p.id - q.id)), 1000, someLimit)
  if ('mismatch' in byCell) t.fail(byCell.mismatch)
  else t.pass('1000 boxes answered in id order from entries stored cell by cell')
  const b = new BoxIndexBuilder()
  for (const id of [-1, 2 ** 32, 1.5]) t.throws(() => b.add({ id, minLon: 0, minLat: 0, maxLon: 0, maxLat: 0, geometry: '', json: '{}' }), /not a 32-bit unsigned integer/)
})
