import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Readable } from 'node:stream'
import { sql } from '../../db/kysely.ts'
import type { FastifyInstance } from 'fastify'
import { buildTestApp, importVegas, openTestDatabase, vegasAbsent } from '../helper.ts'
import { dataset, importText, sameDataset, TZ } from './datasets.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { openKmlSource } from '../../lib/kml/source.ts'
import type { DatabaseHandle } from '../../db/index.ts'

const run = promisify(execFile)

// Edge cases the Vegas file lacks: markup and `]]>` in text, a carriage return, empty names, sibling
// folders of one name, an empty folder, placemarks after a subfolder closes, styles with attributes,
// repeated elements, a StyleMap with an inline style, SimpleData, holes, and a line across the antimeridian.
const TRICKY = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2">
<Document><name>tricky</name>
  <Style id="icon"><IconStyle><scale>1.2</scale><Icon><href>https://example.org/i.png</href></Icon><hotSpot x="0.5" y="0" xunits="fraction" yunits="pixels"/></IconStyle>
    <LabelStyle><gx:labelVisibility>1</gx:labelVisibility></LabelStyle>
    <ListStyle><ItemIcon><state>open</state><href>a.png</href></ItemIcon><ItemIcon><state>closed</state><href>b.png</href></ItemIcon></ListStyle></Style>
  <Style id="line"><LineStyle><color>ff0000ff</color><width>3</width></LineStyle><PolyStyle><fill>0</fill></PolyStyle></Style>
  <StyleMap id="map"><Pair><key>normal</key><styleUrl>#icon</styleUrl></Pair><Pair><key>highlight</key><Style><IconStyle><scale>2</scale></IconStyle></Style></Pair></StyleMap>
  <Placemark><name>top &amp; level</name><description><![CDATA[<b>bold</b> and ]]]]><![CDATA[> end]]></description><styleUrl>#map</styleUrl>
    <ExtendedData><Data name="kind"><value>a &lt;b&gt; c</value></Data><SchemaData schemaUrl="#s"><SimpleData name="n">42</SimpleData></SchemaData>
    <Data name="gx_media_links"><value>https://example.org/1.jpg https://example.org/2.mp4</value></Data></ExtendedData>
    <Point><coordinates> -115.1, 36.1, 12 </coordinates></Point></Placemark>
  <Folder><name>A</name>
    <Folder><name>B</name><Placemark><name>in B</name><description>line&#13;feed</description><LineString><coordinates>179.5,10 -179.5,10.5</coordinates></LineString></Placemark></Folder>
    <Placemark><name>in A after B</name><Point><coordinates>1,2</coordinates></Point></Placemark>
    <Folder><name>Empty</name></Folder>
  </Folder>
  <Folder><name>A</name>
    <Placemark><name></name><styleUrl>#line</styleUrl><Polygon><outerBoundaryIs><LinearRing><coordinates>10,10,0 20,10,0 20,20,0 10,20,0 10,10,0</coordinates></LinearRing></outerBoundaryIs>
      <innerBoundaryIs><LinearRing><coordinates>12,12 14,12 14,14 12,12</coordinates></LinearRing></innerBoundaryIs></Polygon></Placemark>
    <Folder><name>B</name><Placemark><name>second B</name><Point><coordinates>3,4</coordinates></Point></Placemark></Folder>
  </Folder>
  <Placemark><name>last, at the top</name><description>plain</description><Point><coordinates>5,6</coordinates></Point></Placemark>
</Document></kml>
`

async function importFile (t: Test, path: string): Promise<DatabaseHandle> {
  const handle = await openTestDatabase(t)
  const source = await openKmlSource(path)
  try {
    await importPlacemarks(handle, source.chunks, { timeZone: TZ, source: path })
  } finally {
    await source.close()
  }
  return handle
}

const ogrinfo = await run('which', ['ogrinfo']).then(({ stdout }) => stdout.trim(), () => '')

async function exportApp (t: Test, handle: DatabaseHandle): Promise<FastifyInstance> {
  return buildTestApp(t, handle)
}

t.test('a tricky document survives export and import', async (t) => {
  const original = await importText(t, TRICKY)
  const app = await exportApp(t, original)
  const res = await app.inject('/api/v1/export.kml')
  t.equal(res.statusCode, 200)
  const again = await importText(t, res.body)
  await sameDataset(t, again, original, 'tricky')
  const { placemarks, folders } = await dataset(again)
  t.equal(placemarks.length, 6)
  t.same(folders.map((f) => f.name), ['A', 'B', 'Empty', 'A', 'B'], 'every folder, the empty one and both of a repeated name too')
  t.match(res.body, '<![CDATA[<b>bold</b> and ]]]]><![CDATA[> end]]>', 'markup kept readable in CDATA, split at ]]>')
  t.match(res.body, 'line&#13;feed', 'a carriage return as a character reference')
  t.match(res.body, '<hotSpot x="0.5" y="0" xunits="fraction" yunits="pixels"></hotSpot>', 'attributes written back')
})

t.test('the Vegas KMZ: KML and KMZ exports import as the same dataset', { skip: vegasAbsent }, async (t) => {
  const original = await openTestDatabase(t)
  await importVegas(original)
  const app = await exportApp(t, original)
  const version = (await sql<{ version: number }>`SELECT version::int AS version FROM dataset`.execute(original.db)).rows[0].version
  const dir = mkdtempSync(join(tmpdir(), 'export-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))

  const kml = await app.inject('/api/v1/export.kml')
  t.equal(kml.statusCode, 200)
  t.equal(kml.headers['content-type'], 'application/vnd.google-earth.kml+xml')
  t.equal(kml.headers['content-disposition'], `attachment; filename="placemarks-${version}.kml"`)
  t.equal(kml.headers.etag, `W/"${version}"`)
  t.match(kml.body, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<kml xmlns="http:\/\/www\.opengis\.net\/kml\/2\.2">/)
  await sameDataset(t, await importText(t, kml.body), original, 'KML')
  const again = await app.inject('/api/v1/export.kml')
  t.equal(again.body, kml.body, 'the same bytes for the same dataset version')

  const kmz = await app.inject('/api/v1/export.kmz')
  t.equal(kmz.statusCode, 200)
  t.equal(kmz.headers['content-type'], 'application/vnd.google-earth.kmz')
  t.equal(kmz.headers['content-disposition'], `attachment; filename="placemarks-${version}.kmz"`)
  t.equal(kmz.rawPayload.subarray(0, 4).toString('latin1'), 'PK\u0003\u0004', 'a zip')
  t.ok(kmz.rawPayload.length < kml.rawPayload.length / 3, `deflated (${kmz.rawPayload.length} bytes from ${kml.rawPayload.length})`)
  const kmzFile = join(dir, 'export.kmz')
  writeFileSync(kmzFile, kmz.rawPayload)
  await sameDataset(t, await importFile(t, kmzFile), original, 'KMZ')

  // Not kept in the answer cache, but tagged with the dataset version.
  const notModified = await app.inject({ url: '/api/v1/export.kmz', headers: { 'if-none-match': `W/"${version}"` } })
  t.equal(notModified.statusCode, 304)
  t.equal(notModified.body, '')
  t.equal((await app.inject({ url: '/api/v1/export.kml', headers: { 'if-none-match': `"${version + 1}"` } })).statusCode, 200, 'another version\'s tag: the document')
  const head = await app.inject({ method: 'HEAD', url: '/api/v1/export.kmz' })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['content-type'], 'application/vnd.google-earth.kmz')
  t.equal(head.headers['content-disposition'], `attachment; filename="placemarks-${version}.kmz"`)
  t.equal(head.rawPayload.length, 0, 'HEAD: the headers alone')

  // LIBKML would take the file first where it is built in: the KML driver is the one asked for.
  const gdal = { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, GDAL_SKIP: 'LIBKML' } }
  t.test('GDAL\'s KML driver reads the export', { skip: ogrinfo === '' ? 'ogrinfo (GDAL) is not installed: apt-get install gdal-bin' : false }, async (t) => {
    const kmlFile = join(dir, 'export.kml')
    writeFileSync(kmlFile, kml.rawPayload)
    const total = async (path: string) => {
      const { stdout } = await run('ogrinfo', ['-ro', '-al', '-so', path], gdal)
      return [...stdout.matchAll(/^Feature Count: (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0)
    }
    const placemarks = (await dataset(original)).placemarks.length
    t.equal(await total(kmlFile), placemarks, 'every placemark, over the folders\' layers')
    // One placemark's fields as GDAL reads them.
    const first = ((await dataset(original)).placemarks as { name: string; folder_path: string[] }[]).find((p) => !p.name.includes('\n'))!
    const layer = first.folder_path[first.folder_path.length - 1]
    const { stdout: feature } = await run('ogrinfo', ['-ro', kmlFile, layer], gdal)
    t.match(feature, `Name (String) = ${first.name}`, 'a placemark\'s name, in its folder\'s layer')
    t.equal(await total(`/vsizip/${kmzFile}/doc.kml`), placemarks, 'the KMZ\'s doc.kml too')
    const { stdout } = await run('ogrinfo', ['-ro', '-so', kmlFile], gdal)
    t.match(stdout, /using driver `KML' successful/, 'opened by the KML driver')
    const folders = (await dataset(original)).folders.map((f) => f.name)
    for (const name of folders) t.match(stdout, `: ${name}`, `folder ${name} is a layer`)
  })
})

t.test('filters: folder and bbox, as the list and the box query', async (t) => {
  const handle = await importText(t, TRICKY)
  const app = await exportApp(t, handle)
  const exported = async (query: string) => {
    const res = await app.inject(`/api/v1/export.kml?${query}`)
    t.equal(res.statusCode, 200, query)
    const again = await importText(t, res.body)
    return (await dataset(again)).placemarks.map((p) => p.name)
  }
  const names = async (url: string) => ((await app.inject(url)).json().placemarks as { name: string }[]).map((p) => p.name)

  t.same(await exported('folder=B'), await names('/api/v1/placemarks?folder=B'), 'folder: as the list')
  t.same(await exported('folder=B'), ['in B', 'second B'])
  t.same(await exported('folder=Nowhere'), [], 'no placemark: an empty document')
  const box = async (b: [number, number, number, number]) => {
    const [minLon, minLat, maxLon, maxLat] = b
    t.same(await exported(`bbox=${b.join(',')}`), await names(`/api/v1/spatial/bbox?min_lon=${minLon}&min_lat=${minLat}&max_lon=${maxLon}&max_lat=${maxLat}`), `bbox ${b.join(',')}: as the box query`)
  }
  await box([0, 0, 25, 25])
  await box([13.5, 12.5, 13.8, 12.8])
  await box([170, 0, -170, 20])
  t.same(await exported('bbox=170,0,-170,20'), ['in B'], 'across the antimeridian')
  t.same(await exported('bbox=13.5,12.5,13.8,12.8'), [], 'inside a hole: not intersecting')
  t.same(await exported('folder=A&bbox=0,0,25,25'), ['in B', 'in A after B', '', 'second B'], 'both filters (a line across the antimeridian is planar: it crosses the box)')
  t.same(await exported('folder=A&bbox=0,0,5,5'), ['in A after B', 'second B'], 'both filters')
  const filtered = await app.inject('/api/v1/export.kml?folder=B')
  t.notMatch(filtered.body, '<name>Empty</name>', 'a filtered export leaves out the folders around none of its placemarks')

  for (const [query, message] of [
    ['bbox=1,2,3', 'querystring/bbox must be four numbers: minlon,minlat,maxlon,maxlat'],
    ['bbox=a,b,c,d', 'querystring/bbox must be four numbers: minlon,minlat,maxlon,maxlat'],
    ['bbox=0,10,1,5', 'querystring/bbox minlat must be <= maxlat'],
    ['bbox=0,0,181,1', 'querystring/bbox longitudes must be in [-180, 180]'],
    ['bbox=0,-91,1,1', 'querystring/bbox latitudes must be in [-90, 90]'],
    ['folder=', 'querystring/folder must NOT have fewer than 1 characters'],
    ['page=2', "querystring: unknown parameter 'page'"]
  ]) {
    for (const ext of ['kml', 'kmz']) {
      const res = await app.inject(`/api/v1/export.${ext}?${query}`)
      t.equal(res.statusCode, 400, `${ext} ${query}`)
      t.same(res.json(), { error: 'Bad Request', message }, `${ext} ${query}`)
    }
  }
})

t.test('an empty database exports an empty document', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await exportApp(t, handle)
  const res = await app.inject('/api/v1/export.kml')
  t.equal(res.statusCode, 200)
  t.equal(res.headers.etag, 'W/"0"')
  t.match(res.body, '<Document>\n<name>placemarks</name>\n</Document>\n</kml>\n')
})

t.test('the embedded database (PGlite) exports the same document', async (t) => {
  const answers: string[] = []
  for (const kind of ['postgres', 'pglite'] as const) {
    const handle = await openTestDatabase(t, kind)
    await importPlacemarks(handle, Readable.from([TRICKY]), { timeZone: TZ, source: 'tricky.kml' })
    const app = await exportApp(t, handle)
    const res = await app.inject('/api/v1/export.kml?bbox=0,0,25,25')
    t.equal(res.statusCode, 200, kind)
    answers.push(res.body)
  }
  t.equal(answers[1], answers[0])
})
