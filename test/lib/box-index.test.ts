import t from 'tap'
import { boundsOf, intersectsBox, type Box, type Geometry, type Position } from '../../lib/geo/box.ts'
import { BoxIndexBuilder, joinSummaries, type BoxIndex, type SummaryBytes } from '../../lib/geo/box-index.ts'
import { summaryPieces } from '../../lib/placemarks/box-answer.ts'
import { entryTilePlacemark, tilePlacemark } from '../../lib/geo/tiles.ts'
import { StyleResolver } from '../../lib/kml/resolved-style.ts'
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

// A summary as the loader serializes it (toSummary's key order).
function summary (id: number, over: Record<string, unknown> = {}): string {
  const geometry = JSON.stringify({ type: 'Point', coordinates: [id / 7, -id / 9] })
  return JSON.stringify({
    id,
    name: `Place ${id}`,
    description: id % 3 ? null : `Described "${id}" \\ ☕`,
    style_id: id % 2 ? 's1' : null,
    folder_path: ['A', `B ${id % 4}`],
    geometry_type: 'Point',
    geometry,
    coordinates_raw: `${id / 7},${-id / 9},0`,
    media_links: [],
    created_at: '2026-01-01T00:00:00.000Z',
    time_begin: null,
    time_end: null,
    ...over
  })
}

// An index of the summaries, each at its geometry's bounds (or at `geometry`'s, when given).
function indexOfSummaries (list: { id: number; json: string; geometry?: string }[]): BoxIndex {
  const b = new BoxIndexBuilder()
  for (const { id, json, geometry } of list) {
    const g = JSON.parse(geometry ?? (JSON.parse(json) as { geometry: string }).geometry) as Geometry
    const bounds = boundsOf(g)
    b.add({ id, ...bounds, geometry: JSON.stringify(g), json: summaryPieces(json) })
  }
  return b.finish()
}

// The summaries an index answers for a box holding all of them, in id order, as text.
function answered (list: { id: number; json: string; geometry?: string }[]): string {
  const got = indexOfSummaries(list).search({ minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }, 10_000)
  const bytes = Buffer.alloc(got.byteLength)
  got.copyTo(bytes, 0)
  return bytes.toString()
}

t.test('summaries kept as shared and derived pieces come back byte for byte', async (t) => {
  const line = JSON.stringify({ type: 'LineString', coordinates: [[1.5, 2], [1.25, 2.125], [-3e-7, 1e21]] })
  const polygon = JSON.stringify({ type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]], [[0.2, 0.2], [0.4, 0.2], [0.2, 0.4], [0.2, 0.2]]] })
  const list = [
    ...Array.from({ length: 200 }, (_, k) => ({ id: k + 1, json: summary(k + 1) })),
    // Raw coordinates that are not the KML form of the geometry's: kept as they are.
    { id: 301, json: summary(301, { coordinates_raw: ' 42.857142857142854,-33.44444444444444,0\n' }) },
    { id: 302, json: summary(302, { coordinates_raw: '42.857142857142854,-33.44444444444444' }) },
    { id: 303, json: summary(303, { coordinates_raw: null }) },
    { id: 304, json: summary(304, { coordinates_raw: '' }) },
    // Line strings and polygons, their raw text in KML form or not.
    { id: 305, json: summary(305, { geometry_type: 'LineString', geometry: line, coordinates_raw: '1.5,2,0 1.25,2.125,0 -3e-7,1e21,0' }) },
    { id: 306, json: summary(306, { geometry_type: 'Polygon', geometry: polygon, coordinates_raw: '0,0,0 1,0,0 1,1,0 0,0,0 0.2,0.2,0 0.4,0.2,0 0.2,0.4,0 0.2,0.2,0' }) },
    { id: 307, json: summary(307, { geometry_type: 'Polygon', geometry: polygon, coordinates_raw: '0,0,0 1,0,0 1,1,0 0,0,0' }) },
    // Unusual text everywhere: multi-byte, escapes, keys' look-alikes inside strings, long pieces.
    { id: 308, json: summary(308, { name: ',"style_id":"x","geometry":"', folder_path: ['","coordinates_raw":"', '\u2028é'], media_links: ['https://example.org/a"b'] }) },
    { id: 309, json: summary(309, { description: 'd'.repeat(70_000), folder_path: ['f'.repeat(300)], time_begin: '2017-10-01T00:00:00.000Z', time_end: '2017-10-02T00:00:00.000Z' }) },
    { id: 310, json: summary(310, { geometry: JSON.stringify({ coordinates: [5, 6], type: 'Point' }) }) },
    // Not a summary at all: kept whole.
    { id: 311, json: JSON.stringify({ id: 311, geometry: JSON.stringify({ type: 'Point', coordinates: [1, 1] }) }) },
    // A head whose id is not the entry's: kept as written.
    { id: 312, json: summary(312).replace('{"id":312,', '{"id":3120,') },
    { id: 313, json: summary(313).replace('{"id":313,"name"', '{"id":313, "name"') },
    // Numbers that pack and numbers that must not: negative zero, leading zeros, exponents, 16 digits.
    { id: 314, json: summary(314, { geometry_type: 'LineString', geometry: '{"type":"LineString","coordinates":[[-0,0.0],[-0.000,1e-7],[0.1234567890123456,-179.99999999999997],[007,1.50]]}', coordinates_raw: '-0,0.0,0 -0.000,1e-7,0 0.1234567890123456,-179.99999999999997,0 007,1.50,0' }), geometry: line },
    { id: 4294967295, json: summary(4294967295), geometry: JSON.stringify({ type: 'Point', coordinates: [1, 1] }) }
  ]
  t.equal(answered(list), list.map((p) => p.json).join(','))
  const pieces = summaryPieces(list[0].json)
  t.equal(pieces.join(''), list[0].json, 'the pieces join into the summary')
  t.equal(pieces.length, 6, 'id to description, up to the coordinates, coordinates, up to the raw value, the raw value, the rest')
  t.same(summaryPieces('{"id":1}'), ['{"id":1}'], 'one piece when the keys are not there')
})

t.test('a tile reads the same placemark from an entry as from its whole summary', async (t) => {
  const styles = new StyleResolver([
    { id: 's1', kind: 'Style', definition: { 'IconStyle.color': 'ff0000ff', 'LineStyle.color': '7f00ff00', 'LineStyle.width': '3', 'PolyStyle.color': '40ff0000' } },
    { id: 'a "quoted" \\ style', kind: 'Style', definition: { 'IconStyle.color': 'ff00ff00' } }
  ])
  const line = { type: 'LineString', coordinates: [[1.5, 2, 10], [1.25, 2.125, 11], [-3e-7, 1e-21, 12]] }
  const polygon = { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]], [[0.2, 0.2], [0.4, 0.2], [0.2, 0.4], [0.2, 0.2]]] }
  const shape = (id: number, g: { type: string; coordinates: unknown }, over: Record<string, unknown> = {}) =>
    ({ id, json: summary(id, { geometry_type: g.type, geometry: JSON.stringify(g), coordinates_raw: null, ...over }) })
  const list = [
    ...Array.from({ length: 20 }, (_, k) => ({ id: k + 1, json: summary(k + 1) })),
    shape(30, line, { style_id: 's1', time_begin: '2017-10-01T22:02:44.000Z', time_end: null }),
    shape(31, polygon, { style_id: 's1', time_begin: '1997-01-01T00:00:00.000Z', time_end: '1997-12-31T23:59:59.999Z' }),
    // A line of one position, repeated: no extent, so no packed geometry; the whole summary decides.
    shape(32, { type: 'LineString', coordinates: [[4, 5], [4, 5]] }),
    // Names, folders and styles with escapes and with the keys' look-alikes; a point with an altitude.
    { id: 33, json: summary(33, { name: 'a \\ "b" ,"description":"x"', style_id: 'a "quoted" \\ style', folder_path: ['","coordinates_raw":"', 'la\\st "one"'] }) },
    { id: 34, json: summary(34, { name: '', folder_path: [], geometry: JSON.stringify({ type: 'Point', coordinates: [-115.17, 36.11, 620.5] }) }) },
    { id: 35, json: summary(35, { folder_path: ['only'], description: 'd'.repeat(5000), time_begin: '2017-10-01T00:00:00.000Z', time_end: '2017-10-02T00:00:00.000Z' }) },
    { id: 36, json: summary(36, { geometry: JSON.stringify({ type: 'Point', coordinates: [1e-7, -2.5e+2] }) }) },
    // Key order unlike toSummary's, and no times at all: read whole.
    { id: 37, json: summary(37, { geometry: JSON.stringify({ coordinates: [5, 6], type: 'Point' }) }) },
    { id: 38, json: JSON.stringify({ id: 38, name: 'no times', description: null, style_id: null, folder_path: ['x'], geometry_type: 'Point', geometry: JSON.stringify({ type: 'Point', coordinates: [7, 8] }), coordinates_raw: '7,8,0', media_links: [], created_at: '2026-01-01T00:00:00.000Z' }) }
  ]
  const ix = indexOfSummaries(list)
  // The tiles use two dimensions: a position's third number is left out of the comparison.
  const flat = (g: Geometry): Geometry => JSON.parse(JSON.stringify(g, (_k, v: unknown) => Array.isArray(v) && typeof v[0] === 'number' ? v.slice(0, 2) : v)) as Geometry
  for (let i = 0; i < ix.size; i++) {
    const whole = tilePlacemark(ix.summaryOf(i), styles)
    t.same(entryTilePlacemark(ix, i, styles), { ...whole, geometry: flat(whole.geometry) }, `placemark ${ix.idOf(i)}`)
  }
  t.equal(ix.size, list.length)
  t.equal(ix.summaryOf(ix.size - 1), list[list.length - 1].json, 'the whole summary, its raw coordinates included')
})

t.test('repeated pieces are kept once, derived raw coordinates not at all', async (t) => {
  const build = (over: (id: number) => Record<string, unknown>) => {
    const b = new BoxIndexBuilder()
    for (let id = 1; id <= 2000; id++) {
      const json = summary(id, over(id))
      b.add({ id, minLon: id / 7, minLat: -id / 9, maxLon: id / 7, maxLat: -id / 9, geometry: '', json: summaryPieces(json) })
    }
    return b.finish()
  }
  const shared = build(() => ({}))
  const unique = build((id) => ({ folder_path: [`folder ${id}`], created_at: `2026-01-01T00:00:${String(id % 60).padStart(2, '0')}.${id}Z`, coordinates_raw: `${id},0` }))
  t.ok(shared.memoryBytes < 0.6 * unique.memoryBytes, `${shared.memoryBytes} bytes shared against ${unique.memoryBytes}`)
  t.ok(shared.memoryBytes < 0.6 * shared.bytes, `${shared.memoryBytes} bytes held for ${shared.bytes} bytes of summaries`)
})

t.test('the id-order merge over many runs', async (t) => {
  // Entries stored in runs of ascending ids: 1 to 500 runs, of random lengths, ids interleaved.
  for (const runs of [1, 2, 3, 17, 64, 65, 500]) {
    const ids = Array.from({ length: 5000 }, (_, k) => 2 * k + 1)
    const order: number[][] = Array.from({ length: runs }, () => [])
    for (const id of ids) order[Math.floor(rand() * runs)].push(id)
    const b = new BoxIndexBuilder()
    for (const run of order) for (const id of run) b.add({ id, minLon: 0, minLat: 0, maxLon: 0, maxLat: 0, geometry: '', json: `{"id":${id}}` })
    const ix = b.finish()
    const all = Array.from({ length: ix.size }, (_, i) => i)
    const stored = order.flat()
    t.same(values(ix.search({ minLon: -1, minLat: -1, maxLon: 1, maxLat: 1 }, 10_000)).map((v) => (v as { id: number }).id), ids, `${runs} runs: every id in order`)
    // Positions given twice (both halves of an antimeridian box) are taken once; `keep` filters; the limit stops.
    const merged = ix.merged([...all, ...all.slice(0, 100)].sort(() => rand() - 0.5), 30, (i) => i % 2 === 0)
    const expected = all.filter((i) => i % 2 === 0).map((i) => stored[i]).sort((a, b) => a - b).slice(0, 30)
    t.same(merged.map((i) => stored[i]), expected, `${runs} runs: the first 30 kept, in id order`)
  }
})

t.test('a builder told how many placemarks to expect: more, fewer or as many', async (t) => {
  for (const expected of [1, 1500, 3000, 10_000]) {
    const b = new BoxIndexBuilder(expected)
    for (const { id, geometry } of items.slice(0, 3000)) {
      const bounds = boundsOf(geometry)
      b.add({ id, ...bounds, geometry: JSON.stringify(geometry), json: `{"id":${id}}` })
    }
    const ix = b.finish()
    t.equal(ix.size, 3000)
    const result = compare(ix, 100, someLimit)
    if ('mismatch' in result) t.fail(`expected ${expected}: ${result.mismatch}`)
    else t.pass(`expected ${expected}: 100 boxes answered`)
  }
})

t.test('geometries past one packed array, and one longer than an array', async (t) => {
  // Lines of 400 positions fill several of the 1 MiB arrays; a ring of 70,000 positions gets one of its own, in between.
  const list: { id: number; geometry: Geometry }[] = []
  for (let id = 1; id <= 700; id++) {
    const [x, y] = near()
    if (id === 350) {
      list.push({ id, geometry: { type: 'Polygon', coordinates: [Array.from({ length: 70_000 }, (_, k): Position => k === 69_999 ? [x, y] : [x + 3 * Math.cos(k / 11141), y + 3 * Math.sin(k / 11141)])] } })
      continue
    }
    list.push({ id, geometry: { type: 'LineString', coordinates: Array.from({ length: 400 }, (_, k): Position => [x + k / 100, y + Math.sin(k) / 10]) } })
  }
  // The per-geometry answers (the slow part: 350,000 positions a box) once, for both builders.
  const boxes = Array.from({ length: 300 }, () => {
    const box = randomBox()
    return { box, want: list.filter((p) => intersectsBox(p.geometry, box)).map((p) => p.id).sort((a, c) => a - c) }
  })
  for (const expected of [undefined, 700]) {
    const b = new BoxIndexBuilder(expected)
    for (const { id, geometry } of list) b.add({ id, ...boundsOf(geometry), geometry: JSON.stringify(geometry), json: `{"id":${id}}` })
    const ix = b.finish()
    let answered = 0
    for (const { box, want } of boxes) {
      const got = values(ix.search(box, 10_000)).map((v) => (v as { id: number }).id)
      if (JSON.stringify(got) !== JSON.stringify(want)) t.fail(`expected ${expected}: box ${JSON.stringify(box)}: ${got.length} against ${want.length}`)
      else answered++
    }
    t.equal(answered, 300, `expected ${expected}: 300 boxes answered as the per-geometry test does`)
  }
})
