/**
 * The box query on the database (db/placemarks.ts boxAnswer, migrations 015 and 018–020), on PostgreSQL
 * and PGlite: its answers byte for byte against the JavaScript test of every placemark (lib/geo/box.ts) and the
 * summaries serialized from their columns (db/placemarks.ts toSummary), on the edge cases; the
 * stored summaries and packed geometries of an import and of rows filled by the migration; the SQL
 * intersection function against the JavaScript one on random shapes; a whole-world box over 100k placemarks.
 */
import t, { type Test } from 'tap'
import { Readable } from 'node:stream'
import { mkdtempSync, rmSync, createReadStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, dbKinds, openTestDatabase, unmigratedDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { boxAnswer, holdsEveryPlacemark, SUMMARY, toSummary, type SummaryRow } from '../../db/placemarks.ts'
import type { Database } from '../../db/types.ts'
import { intersectsBox, packGeometry, packedIntersectsBox, type Box, type Geometry } from '../../lib/geo/box.ts'
import { joinSummaries } from '../../lib/geo/box-index.ts'
import { bboxBody } from '../../lib/placemarks/box-answer.ts'
import { mulberry32 } from '../../lib/random.ts'
import { toRow } from '../../lib/import/placemarks.ts'
import { readKmlBatches, type KmlPlacemark } from '../../lib/kml/reader.ts'
import { generateKml } from '../../scripts/generate-kml.ts'

const ring = (points: [number, number][]) => points.map(([x, y]) => `${x},${y}`).join(' ')
const point = (name: string, x: number, y: number, extra = '') => `<Placemark><name>${name}</name>${extra}<Point><coordinates>${x},${y},0</coordinates></Point></Placemark>`
const line = (name: string, points: [number, number][]) => `<Placemark><name>${name}</name><LineString><coordinates>${ring(points)}</coordinates></LineString></Placemark>`
const polygon = (name: string, outer: [number, number][], holes: [number, number][][] = []) =>
  `<Placemark><name>${name}</name><Polygon><outerBoundaryIs><LinearRing><coordinates>${ring(outer)}</coordinates></LinearRing></outerBoundaryIs>${
    holes.map((h) => `<innerBoundaryIs><LinearRing><coordinates>${ring(h)}</coordinates></LinearRing></innerBoundaryIs>`).join('')}</Polygon></Placemark>`

// Placemarks set around the edge cases, with strings that JSON escapes.
const KML = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document>
<Folder><name>Edge "cases" \\ here</name>
${point('on the east edge', 10, 10, '<description><![CDATA[<b>"quoted"</b> \\ back\tslash\nnew line é 😀 \u2028 </script>]]></description><TimeStamp><when>2017-10-01T22:09:48Z</when></TimeStamp>')}
${point('1e-7 past the east edge', 10.0000001, 9.5, '<TimeSpan><begin>2001</begin><end>2002-03</end></TimeSpan>')}
${point('5e-7 past the north edge&#13;', 9.5, 10.0000005, '<ExtendedData><Data name="gx_media_links"><value>https://example.org/a.jpg https://example.org/"b".mp4</value></Data></ExtendedData>')}
${point('inside', 9.5, 9.5)}
${line('line bounds 5e-7 short of the box', [[8, 9.5], [8.9999995, 9.6]])}
${line('line ending on the west edge', [[8, 9.5], [9, 9.7]])}
</Folder>
<Folder><name>Lines</name>
${line('crossing with no vertex inside', [[19.5, 20.5], [21.5, 20.6]])}
${line('passing over the corner', [[19, 20.5], [20.5, 22]])}
${line('touching the corner', [[19, 22], [20, 21]])}
${line('diagonal through the box', [[19, 19], [22, 22.5]])}
${line('tiny diagonal', [[0, 0], [3e-170, 3e-170]])}
</Folder>
<Folder><name>Polygons</name>
${polygon('square with a hole', [[30, 30], [34, 30], [34, 34], [30, 34], [30, 30]], [[[31, 31], [33, 31], [33, 33], [31, 33], [31, 31]]])}
${polygon('sharing an edge', [[35, 30], [36, 30], [36, 31], [35, 31], [35, 30]])}
${polygon('triangle with its corner cut off', [[40, 40], [44, 40], [40, 44], [40, 40]])}
</Folder>
<Folder><name>Antimeridian</name>
${line('east of it', [[179.5, -15], [179.9, -15.5]])}
${point('west of it', -179.8, -15)}
${polygon('on it', [[179.8, -16], [180, -16], [180, -17], [179.8, -17], [179.8, -16]])}
${point('on -180', -180, -16.5)}
</Folder>
<Folder><name>Cluster</name>
${Array.from({ length: 30 }, (_, i) => point(`cluster ${i}`, 60 + (i % 6) * 0.01, 60 + Math.floor(i / 6) * 0.01)).join('\n')}
</Folder>
<Folder><name>Near misses</name>
${line('near miss A', [[50, 50], [50.2, 50.2]])}
${line('near miss B', [[50.05, 49.9], [50.3, 50]])}
${point('under two lines', 50.12, 50.02)}
</Folder>
</Document></kml>`

const BOXES: Box[] = [
  { minLon: 9, minLat: 9, maxLon: 10, maxLat: 10 },
  { minLon: 10, minLat: 10, maxLon: 10, maxLat: 10 },
  { minLon: 9, minLat: 8, maxLon: 11, maxLat: 11 },
  { minLon: 9.0000001, minLat: 9, maxLon: 10, maxLat: 10 },
  { minLon: 20, minLat: 20, maxLon: 21, maxLat: 21 },
  { minLon: 20.4, minLat: 20.4, maxLon: 20.6, maxLat: 20.6 },
  { minLon: 30.2, minLat: 30.2, maxLon: 30.5, maxLat: 30.5 },
  { minLon: 31.5, minLat: 31.5, maxLon: 32.5, maxLat: 32.5 },
  { minLon: 31, minLat: 31, maxLon: 33, maxLat: 33 },
  { minLon: 30.5, minLat: 31.5, maxLon: 31.5, maxLat: 32.5 },
  { minLon: 34, minLat: 31, maxLon: 35, maxLat: 32 },
  { minLon: 36, minLat: 29, maxLon: 37, maxLat: 30 },
  { minLon: 42.1, minLat: 42.1, maxLon: 43, maxLat: 43 },
  { minLon: 41.9, minLat: 41.9, maxLon: 43, maxLat: 43 },
  { minLon: 42, minLat: 42, maxLon: 43, maxLat: 43 },
  { minLon: 179, minLat: -20, maxLon: -179, maxLat: -10 },
  { minLon: 179.9, minLat: -16.5, maxLon: -180, maxLat: -15 },
  { minLon: 180, minLat: -90, maxLon: -180, maxLat: 90 },
  { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 },
  { minLon: 59, minLat: 59, maxLon: 61, maxLat: 61 },
  { minLon: 60.01, minLat: 60.01, maxLon: 60.03, maxLat: 60.03 },
  // Products of these differences underflow: PostgreSQL's float8 refuses them, JavaScript rounds them to zero.
  { minLon: 1e-170, minLat: 1e-170, maxLon: 2e-170, maxLat: 2e-170 }
]

interface Query { box: Box; limit: number }
// Small boxes (migration 019) whose first candidates in id order are lines that miss them: the lazy test
// finds nothing in its first 2 × limit and the whole statement answers, or finds the answer itself.
const UNDER_LINES: Box = { minLon: 50.1, minLat: 50, maxLon: 50.15, maxLat: 50.04 }
const ON_LINE_A: Box = { minLon: 50, minLat: 50, maxLon: 50.05, maxLat: 50.05 }
const QUERIES: Query[] = [...BOXES.map((box) => ({ box, limit: 1000 })), { box: BOXES[19]!, limit: 7 }, { box: BOXES[18]!, limit: 1 }, { box: BOXES[15]!, limit: 2 },
  { box: UNDER_LINES, limit: 1 }, { box: UNDER_LINES, limit: 2 }, { box: ON_LINE_A, limit: 1 }]

type Placemark = { row: SummaryRow; geometry: Geometry }

// Every placemark in id order, its geometry read once for all the boxes asked of it.
async function placemarks (db: Kysely<Database>): Promise<Placemark[]> {
  const { rows } = await sql<SummaryRow>`SELECT ${SUMMARY} FROM placemarks p ORDER BY p.id`.execute(db)
  return rows.map((row) => ({ row, geometry: JSON.parse(row.geometry) as Geometry }))
}

// Today's answer, worked out in JavaScript: every placemark's geometry tested, the summaries serialized from their columns.
function expected (all: Placemark[], q: Query): string[] {
  const out: string[] = []
  for (const p of all) {
    if (out.length >= q.limit) break
    if (intersectsBox(p.geometry, q.box)) out.push(JSON.stringify(toSummary(p.row)))
  }
  return out
}

const url = (q: Query) => `/api/v1/spatial/bbox?min_lon=${q.box.minLon}&min_lat=${q.box.minLat}&max_lon=${q.box.maxLon}&max_lat=${q.box.maxLat}&limit=${q.limit}`
const body = (summaries: string[], q: Query) => {
  const bytes = bboxBody(joinSummaries(summaries), { min_lon: q.box.minLon, min_lat: q.box.minLat, max_lon: q.box.maxLon, max_lat: q.box.maxLat })
  return bytes.toString()
}

async function checkAnswers (t: Test, db: Kysely<Database>, queries: Query[], label: string) {
  let found = 0
  const all = await placemarks(db)
  for (const q of queries) {
    const want = expected(all, q)
    const got = await boxAnswer(db, q.box, q.limit)
    if (got.json !== want.join(',') || got.count !== want.length) {
      t.fail(`${label}: ${url(q)}: ${got.count} placemarks, ${want.length} expected\n${got.json.slice(0, 300)}\n${want.join(',').slice(0, 300)}`)
      return
    }
    found += want.length
  }
  t.pass(`${label}: ${queries.length} boxes, ${found} placemarks, byte for byte`)
}

// Every row's stored columns as the placemark's own columns give them.
async function checkStored (t: Test, db: Kysely<Database>, label: string) {
  type Stored = SummaryRow & { summary: string; shape: number[] | null; min_lon: number; min_lat: number; max_lon: number; max_lat: number; bounds: number[] }
  const { rows } = await sql<Stored>`
    SELECT ${SUMMARY}, p.summary, p.shape, p.min_lon, p.min_lat, p.max_lon, p.max_lat,
      ARRAY[(p.bbox[1])[0], (p.bbox[1])[1], (p.bbox[0])[0], (p.bbox[0])[1]] AS bounds
    FROM placemarks p ORDER BY p.id`.execute(db)
  const wrong = rows.filter((r) => {
    const g = JSON.parse(r.geometry) as Geometry
    return r.summary !== JSON.stringify(toSummary(r)) || JSON.stringify(r.shape) !== JSON.stringify(g.type === 'Point' ? null : packGeometry(g)) ||
      [r.min_lon, r.min_lat, r.max_lon, r.max_lat].some((v, i) => v !== r.bounds[i])
  })
  t.same(wrong.map((r) => r.id), [], `${label}: ${rows.length} rows, every stored summary, shape and bounds as the columns give them`)
}

for (const kind of dbKinds) {
  t.test(`the box query's edge cases on ${kind}, in the database and in memory`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const summary = await importPlacemarks(handle, Readable.from([KML]), { timeZone: 'UTC', source: 'edges.kml' })
    t.equal(summary.placemarks, 51)
    // The import vacuums the table it swapped in: every page all-visible, for migration 020's index-only scan.
    // Checked on PGlite, which is this process's alone: on PostgreSQL, transactions of the tests running
    // beside this one can hold VACUUM's horizon back and leave pages unmarked, as other clients can in use.
    if (kind === 'pglite') {
      const { rows: [pages] } = await sql<{ relpages: number; relallvisible: number }>`SELECT relpages, relallvisible FROM pg_class WHERE relname = 'placemarks'`.execute(handle.db)
      t.ok(pages!.relpages > 0 && pages!.relallvisible === pages!.relpages, `every page of the imported table all-visible (${pages!.relallvisible} of ${pages!.relpages})`)
    }
    await checkStored(t, handle.db, 'imported')
    await checkAnswers(t, handle.db, QUERIES, 'database')
    // Some answers spelled out, so that the reference itself is checked.
    const names = async (q: Query) => (JSON.parse(`[${(await boxAnswer(handle.db, q.box, q.limit)).json}]`) as { name: string }[]).map((p) => p.name)
    t.same(await names(QUERIES[0]!), ['on the east edge', 'inside', 'line ending on the west edge'], 'edges count, 1e-7 and 5e-7 outside do not')
    t.same(await names(QUERIES[4]!), ['crossing with no vertex inside', 'touching the corner', 'diagonal through the box'], 'a line crossing with no vertex inside; one over the corner misses')
    t.same(await names(QUERIES[6]!), ['square with a hole'], 'a box inside the polygon')
    t.same(await names(QUERIES[7]!), [], 'a box inside its hole')
    t.same(await names(QUERIES[10]!), ['square with a hole', 'sharing an edge'], 'polygons sharing the box edges')
    t.same(await names(QUERIES[12]!), [], 'a box past the cut-off corner')
    t.same(await names(QUERIES[14]!), ['triangle with its corner cut off'], 'the box corner on the hypotenuse')
    t.same(await names(QUERIES[15]!), ['east of it', 'west of it', 'on it', 'on -180'], 'a box across the antimeridian')
    t.same(await names(QUERIES[21]!), ['tiny diagonal'], 'a box whose test underflows in float8')
    t.same(await names(QUERIES[22]!), ['cluster 0', 'cluster 1', 'cluster 2', 'cluster 3', 'cluster 4', 'cluster 5', 'cluster 6'], 'the limit, in id order')
    t.same(await names(QUERIES[25]!), ['under two lines'], 'a small box: the two lines first in id order miss it, the point after them is found')
    t.same(await names(QUERIES[26]!), ['under two lines'], 'the same with more room than placemarks')
    t.same(await names(QUERIES[27]!), ['near miss A'], 'a small box answered by the first line tested')

    // The route on both paths gives the same bytes as the reference.
    const database = await buildTestApp(t, handle, { BBOX_INDEX_MB: 0 })
    const memory = await buildTestApp(t, handle)
    await memory.boxIndex.idle()
    t.equal(memory.boxIndex.state(), 'ready')
    const mismatches: string[] = []
    const all = await placemarks(handle.db)
    for (const q of QUERIES) {
      const want = body(expected(all, q), q)
      for (const app of [database, memory]) {
        const res = await app.inject(url(q))
        if (res.statusCode !== 200 || res.body !== want) mismatches.push(`${app === memory ? 'memory' : 'database'} ${url(q)}`)
      }
    }
    t.same(mismatches, [], 'the route answers the reference bytes on both paths')
  })

  t.test(`migration 015 fills the rows of a dataset imported before it, on ${kind}`, async (t) => {
    const { handle, step } = await unmigratedDatabase(t, kind)
    await step('014_placemark_time')
    // The rows as the import wrote them then: its columns, created_at at microseconds as now() gives it.
    const placemarks: KmlPlacemark[] = []
    for await (const batch of readKmlBatches(Readable.from([KML]))) {
      for (const item of batch) if (item.kind === 'placemark') placemarks.push(item.placemark)
    }
    const rows = placemarks.map((p, i) => {
      const r = toRow(i + 1, p, 'UTC', '')
      return { id: r[0], name: r[1], description: r[2], style_id: r[3], folder_path: r[4], geometry_type: r[5], geometry: r[6], coordinates_raw: r[7], media_links: r[8], extended_data: r[9], bbox: r[10], time_begin: r[15], time_end: r[16] }
    })
    await sql`INSERT INTO placemarks (id, name, description, style_id, folder_path, geometry_type, geometry, coordinates_raw, media_links, extended_data, bbox, time_begin, time_end)
      SELECT id, name, description, style_id, folder_path, geometry_type, geometry, coordinates_raw, media_links, extended_data, bbox, time_begin, time_end
      FROM json_populate_recordset(NULL::placemarks, ${JSON.stringify(rows)}::json)`.execute(handle.db)
    await sql`UPDATE placemarks SET created_at = '2025-06-01T12:34:56.789999Z'`.execute(handle.db)
    await step('015_placemark_box_answer')
    await checkStored(t, handle.db, 'migrated')
    await step('018_placemark_box_function')
    await checkAnswers(t, handle.db, QUERIES, 'migrated')
    // Migration 019's small boxes, and its down back to 018's function.
    await step('019_placemark_box_lazy_test')
    await checkAnswers(t, handle.db, QUERIES, 'migration 019')
    await step('018_placemark_box_function')
    await checkAnswers(t, handle.db, QUERIES, 'migration 019 undone')
    // Migration 020's index-only candidates, the table not vacuumed (every row read) and vacuumed, and its down back to 019's.
    await step('020_placemark_box_index_only')
    await checkAnswers(t, handle.db, QUERIES, 'migration 020')
    await sql`VACUUM placemarks`.execute(handle.db)
    await checkAnswers(t, handle.db, QUERIES, 'migration 020, vacuumed')
    await step('019_placemark_box_lazy_test')
    await checkAnswers(t, handle.db, QUERIES, 'migration 020 undone')
  })
}

// Shapes on a coarse grid, so that edges run through box corners and along box sides often.
function randomShapes (seed: number, n: number): { c: number[]; box: Box }[] {
  const rand = mulberry32(seed)
  const at = () => Math.round(rand() * 8) / 2
  const out: { c: number[]; box: Box }[] = []
  for (let i = 0; i < n; i++) {
    const k = 2 + Math.floor(rand() * 5)
    const path = () => Array.from({ length: k }, () => [at(), at()] as [number, number])
    const g: Geometry = rand() < 0.4
      ? { type: 'LineString', coordinates: path() }
      : { type: 'Polygon', coordinates: rand() < 0.5 ? [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], path()] : [path()] }
    const x = at()
    const y = at()
    const box = { minLon: x, minLat: y, maxLon: x + Math.floor(rand() * 3) / 2, maxLat: y + Math.floor(rand() * 3) / 2 }
    out.push({ c: packGeometry(g), box })
  }
  return out
}

for (const kind of dbKinds) {
  t.test(`placemark_shape_intersects agrees with lib/geo/box.ts on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    const cases = randomShapes(kind === 'postgres' ? 1 : 2, 4000)
    const { rows } = await sql<{ hit: boolean }>`
      SELECT placemark_shape_intersects(c, x0, y0, x1, y1) AS hit
      FROM ROWS FROM (json_to_recordset(${JSON.stringify(cases.map(({ c, box }) => ({ c, x0: box.minLon, y0: box.minLat, x1: box.maxLon, y1: box.maxLat })))}::json)
        AS (c float8[], x0 float8, y0 float8, x1 float8, y1 float8)) WITH ORDINALITY AS s(c, x0, y0, x1, y1, n)
      ORDER BY n`.execute(handle.db)
    const differ = cases.filter(({ c, box }, i) => rows[i]!.hit !== packedIntersectsBox(c, 0, box))
    t.same(differ.slice(0, 3), [], `${cases.length} shapes, ${rows.filter((r) => r.hit).length} hits, the same answers`)
  })
}

// What one statement read from the placemarks table and its indexes (rows and index entries), from the
// transaction's own statistics: a walk along the ids reads a few, a scan of every candidate all of them.
async function entriesRead (db: Kysely<Database>, box: Box, limit: number): Promise<number> {
  const counted = (c: Kysely<Database>) => sql<{ n: string }>`
    SELECT sum(pg_stat_get_xact_tuples_returned(c.oid) + pg_stat_get_xact_tuples_fetched(c.oid))::text AS n
    FROM pg_class c WHERE c.oid = 'placemarks'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'placemarks'::regclass)`
    .execute(c).then(({ rows: [row] }) => Number(row!.n))
  return db.transaction().execute(async (trx) => {
    const before = await counted(trx)
    t.equal((await boxAnswer(trx, box, limit)).count, limit)
    return await counted(trx) - before
  })
}

t.test('a whole-world box over 100k placemarks walks the ids: limit 10 reads a few rows, not every one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'box-query-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const kml = join(dir, 'placemarks.kml')
  const total = 100_000
  await generateKml(kml, total, 3)
  const handle = await openTestDatabase(t, 'postgres')
  await importPlacemarks(handle, createReadStream(kml), { timeZone: 'UTC', source: 'placemarks.kml' })
  const world = { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 }
  const first = await boxAnswer(handle.db, world, 10)
  t.equal(first.count, 10)
  t.same((JSON.parse(`[${first.json}]`) as { id: number }[]).map((p) => p.id), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  // The whole world, and nearly all of it as a box across the antimeridian. Counted, not timed: a scan of
  // every candidate reads them all (what grows with the dataset), the walk a few dozen. The planner takes
  // the walk for the second box from about 100k placemarks on (at 50k it still scans), hence the size.
  for (const box of [world, { minLon: 100, minLat: -90, maxLon: 90, maxLat: 90 }]) {
    const read = await entriesRead(handle.db, box, 10)
    t.ok(read > 0 && read < 200, `${read} rows and index entries read for a limit of 10 out of ${total}`)
  }

  // A box holding every placemark's bounds is told so (and walks the ids at any limit, where the planner
  // alone would read and sort every row); one that misses a side by a thousandth of a degree is not.
  const { rows: [e] } = await sql<{ x0: number; y0: number; x1: number; y1: number }>`
    SELECT min(min_lon) AS x0, min(min_lat) AS y0, max(max_lon) AS x1, max(max_lat) AS y1 FROM placemarks`.execute(handle.db)
  const extent = { minLon: e!.x0, minLat: e!.y0, maxLon: e!.x1, maxLat: e!.y1 }
  t.ok(await holdsEveryPlacemark(handle.db, world), 'the whole world holds them all')
  t.ok(await holdsEveryPlacemark(handle.db, extent), 'so does their extent, edges included')
  for (const side of ['minLon', 'minLat', 'maxLon', 'maxLat'] as const) {
    const smaller = { ...extent, [side]: extent[side] + (side.startsWith('min') ? 1e-3 : -1e-3) }
    t.notOk(await holdsEveryPlacemark(handle.db, smaller), `the extent less a thousandth of a degree (${side}) does not`)
  }
  const all = await boxAnswer(handle.db, extent, 10_000)
  t.same((JSON.parse(`[${all.json}]`) as { id: number }[]).map((p) => p.id), Array.from({ length: 10_000 }, (_, i) => i + 1), 'the extent at limit 10,000: the first 10,000 ids')

  // The function runs without JIT (past several million placemarks every box's estimate would pass
  // jit_above_cost); the connection keeps its own setting.
  const { rows: [fn] } = await sql<{ config: string[] | null }>`SELECT proconfig AS config FROM pg_proc WHERE proname = 'placemark_box_answer'`.execute(handle.db)
  t.same(fn?.config, ['jit=off', 'enable_bitmapscan=on'], 'the box function runs without JIT')
  const city = { minLon: -115.2, minLat: 36.05, maxLon: -115.1, maxLat: 36.15 }
  const jit = await handle.db.connection().execute(async (c) => {
    await sql`SET jit = on`.execute(c)
    await boxAnswer(c, city, 10)
    // A large box that does not hold every placemark turns bitmap scans off for its statement.
    await boxAnswer(c, { minLon: -130, minLat: 20, maxLon: -60, maxLat: 50 }, 10)
    const after = (await sql<{ jit: string; bitmap: string }>`SELECT current_setting('jit') AS jit, current_setting('enable_bitmapscan') AS bitmap`.execute(c)).rows[0]
    await sql`RESET jit`.execute(c)
    return after
  })
  t.same(jit, { jit: 'on', bitmap: 'on' }, 'the connection keeps its own settings')

  // Large boxes that hold part of the placemarks: found among the first rows in id order, or from the
  // GiST index alone; the same bytes as every placemark tested in JavaScript.
  const large: Query[] = []
  for (const box of [{ minLon: -130, minLat: 20, maxLon: -60, maxLat: 50 }, { minLon: -10, minLat: 35, maxLon: 30, maxLat: 60 },
    { minLon: -180, minLat: 0, maxLon: 180, maxLat: 90 }, { minLon: 130, minLat: -40, maxLon: 155, maxLat: 40 }, { minLon: -115.6, minLat: 35.6, maxLon: -114.6, maxLat: 36.6 },
    { minLon: -74.5, minLat: 40.2, maxLon: -73.5, maxLat: 40.7 }, { minLon: 10, minLat: 10, maxLon: 12, maxLat: 12 }]) {
    for (const limit of [1, 100, 5000]) large.push({ box, limit })
  }
  await checkAnswers(t, handle.db, large, 'large boxes over 100k placemarks')

  // The function's plans are kept per connection: an import that replaces the table is seen at once.
  const answers = await handle.db.connection().execute(async (c) => {
    const before = []
    for (let i = 0; i < 8; i++) before.push(await boxAnswer(c, world, 3))
    await importPlacemarks(handle, Readable.from([KML]), { timeZone: 'UTC', source: 'edges.kml' })
    return { before: before.at(-1), after: await boxAnswer(c, world, 3), inCity: await boxAnswer(c, city, 10) }
  })
  t.equal(answers.before?.count, 3)
  t.match(answers.after.json, /^\{"id":1,"name":"on the east edge"/, 'after an import, the new table\'s placemarks')
  t.same(answers.inCity, { json: '', count: 0 }, 'and none of the old ones')
})
