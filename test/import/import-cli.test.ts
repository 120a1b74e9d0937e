import t, { type Test } from 'tap'
import { runScript, type Run } from '../support/run.ts'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, createPostgresDatabase, vegasAbsent, vegasKmz } from '../helper.ts'
import { openDatabase } from '../../db/index.ts'
import { makeZip } from '../support/zip.ts'
import { notKml } from '../../lib/kml/source.ts'

const runImport = (args: string[], env: Record<string, string>) => runScript('scripts/import.ts', args, env)

const oneLine = (t: Test, run: Run, pattern: RegExp) => {
  t.equal(run.code, 1)
  t.match(run.stderr.trim(), pattern)
  t.equal(run.stderr.trim().split('\n').length, 1, 'one line, no stack trace')
}

t.test('import CLI against PostgreSQL', async (t) => {
  const url = await createPostgresDatabase(t)
  const env = { DATABASE_URL: url }
  const dir = t.testdir({})

  const ok = await runImport(['test/fixtures/small.kml', '--timezone', 'America/Los_Angeles'], env)
  t.equal(ok.code, 0, ok.stderr)
  t.match(ok.stdout, /placemarks: 7 \(Point 5, LineString 1, Polygon 1\)/)
  t.match(ok.stdout, /skipped: 1 MultiGeometry/)
  t.match(ok.stdout, /dataset version 1/)
  // stderr is not a terminal here: no progress, one summary line of the bytes read.
  t.match(ok.stderr, /^read [\d.]+ (B|kB) of small\.kml in [\d.]+ s \(7 placemarks, .*\/s\)\n$/)

  const count = async () => {
    const h = await openDatabase({ url })
    try {
      const r = await h.db.selectFrom('placemarks').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
      return Number(r.n)
    } finally { await h.close() }
  }

  writeFileSync(join(dir, 'bad.kml'), '<kml><Document>\n<Placemark><name>x</name><Point><coordinates>1,1</coordinates></Point></Placemark>\n<Placemark></Document></kml>')
  oneLine(t, await runImport([join(dir, 'bad.kml')], env), /^error: .*bad\.kml: malformed XML at line 3.*nothing was imported$/)
  t.equal(await count(), 7, 'a failed import leaves the old dataset')

  oneLine(t, await runImport([join(dir, 'missing.kmz')], env), /^error: file not found: /)
  writeFileSync(join(dir, 'nokml.kmz'), makeZip([{ name: 'a.png', data: 'x' }]))
  oneLine(t, await runImport([join(dir, 'nokml.kmz')], env), /^error: no \.kml file inside /)
  oneLine(t, await runImport(['test/fixtures/small.kml'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }), /^error: cannot open the database/)

  const usage = await runImport([], env)
  t.equal(usage.code, 2)
  t.match(usage.stderr, /usage: npm run import/)
  const tz = await runImport(['test/fixtures/small.kml', '--timezone', 'Mars/Olympus'], env)
  t.equal(tz.code, 2)
  t.match(tz.stderr, /unknown timezone "Mars\/Olympus"/)

  const dry = await runImport(['db/sample/sample.kml', '--dry-run'], env)
  t.equal(dry.code, 0)
  t.match(dry.stdout, /dry run \(nothing written\)/)
  t.match(dry.stdout, /placemarks: 57/)
  t.equal(await count(), 7, 'a dry run writes nothing')
})

t.test('the Vegas KMZ end to end', { skip: vegasAbsent }, async (t) => {
  const url = await createPostgresDatabase(t)
  const run = await runImport([vegasKmz, '--timezone', 'America/Los_Angeles'], { DATABASE_URL: url })
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /placemarks: 545 \(Point 420, LineString 50, Polygon 75\)/)
  t.match(run.stdout, /styles: 62 \(Style 44, StyleMap 18\)/)
  t.match(run.stdout, /folders: 9/)
  t.match(run.stdout, /timeline events: 188 \(179 with a timestamp, 9 date only/)

  const handle = await openDatabase({ url })
  t.teardown(() => handle.close())
  const app = await buildTestApp(t, handle)
  const get = async (path: string) => (await app.inject(path)).json()
  const stats = await get('/api/v1/stats')
  t.equal(stats.total_placemarks, 545)
  t.equal(stats.total_styles, 62)
  t.same(stats.geometry_types, { Point: 420, LineString: 50, Polygon: 75 })
  t.equal(Object.keys(stats.top_folders).length, 9)
  t.equal((await get('/api/v1/folders')).count, 9)
  const timeline = await get('/api/v1/timeline')
  t.equal(timeline.count, 188)
  t.equal(timeline.events.filter((e: { timestamp: string | null }) => e.timestamp).length, 179)
  t.equal(timeline.events.filter((e: { timestamp: string | null }) => e.timestamp === null).length, 9)
  const volley = timeline.events.find((e: { name: string }) => /^10\/1\/2017[\s\u00a0]+10:09:48 PM - 5, 6 -/.test(e.name))
  t.equal(volley?.timestamp, '2017-10-02T05:09:48Z')
  const sorted = timeline.events.map((e: { timestamp: string | null; date: string }) => e.timestamp ?? `${e.date}T07:00:00Z`)
  t.same(sorted, [...sorted].sort(), 'ordered by instant')
  const list = await get('/api/v1/placemarks?limit=1000')
  t.equal(list.placemarks.length, 545)
  const box = await get('/api/v1/spatial/bbox?min_lon=-115.2&min_lat=36.08&max_lon=-115.15&max_lat=36.11')
  t.ok(box.count > 100, `bbox around the venue finds ${box.count}`)
})

t.test('a file that is not KML is named as such before anything is opened', async (t) => {
  const dir = t.testdir({ 'photo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]), 'data.json': '{"type":"FeatureCollection"}', 'page.html': '<!DOCTYPE html>\n<html><body>hi</body></html>', 'empty.kml': '' })
  // DATABASE_URL points nowhere: the refusal comes first.
  const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }
  const cases: [string, RegExp][] = [
    ['photo.png', /photo\.png is not a KML or KMZ file: it starts with binary data, not with XML$/],
    ['data.json', /data\.json is not a KML or KMZ file: it starts with "\{"type":"Fea…", not with XML$/],
    ['page.html', /page\.html is not a KML or KMZ file: its first element is <html>, not <kml>$/],
    ['empty.kml', /empty\.kml is not a KML or KMZ file: it is empty$/]
  ]
  for (const [file, message] of cases) {
    const run = await runScript('scripts/import.ts', [`${dir}/${file}`], env)
    t.equal(run.code, 1, `${file}: exit 1`)
    t.match(run.stderr.trim(), message, `${file}: says what it is`)
    t.notMatch(run.stderr, /cannot open the database/, `${file}: before the database`)
  }
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<?xml version="1.0" encoding="UTF-16"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document/></kml>', 'utf16le')])
  t.equal(notKml(utf16), null, 'KML in UTF-16 is KML')
  t.equal(notKml(Buffer.from('\ufeff <?xml version="1.0"?>\n<!-- a map -->\n<kml:kml xmlns:kml="http://www.opengis.net/kml/2.2"/>')), null, 'a BOM, a comment and a prefix')
})
