import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readKml, KmlError, type KmlItem } from '../../lib/kml/reader.ts'
import { openKmlSource, KmlSourceError } from '../../lib/kml/source.ts'
import { makeZip } from '../support/zip.ts'
import { projectRoot, vegasAbsent, vegasKmz } from '../helper.ts'

async function collect(chunks: AsyncIterable<string | Buffer> | Iterable<string | Buffer>): Promise<KmlItem[]> {
  const out: KmlItem[] = []
  for await (const item of readKml(chunks)) out.push(item)
  return out
}

async function* pieces(buf: Buffer, size: number) {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size)
}

const doc = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2"><Document><name>Doc name</name>${body}</Document></kml>`

const placemarks = (items: KmlItem[]) => items.flatMap((i) => (i.kind === 'placemark' ? [i.placemark] : []))

t.test('geometry, folders, styles, data', async (t) => {
  const xml = doc(`
    <Style id="s1"><IconStyle><scale>1.2</scale><Icon><href>http://x/i.png</href></Icon></IconStyle></Style>
    <StyleMap id="m1"><Pair><key>normal</key><styleUrl>#s1</styleUrl></Pair><Pair><key>highlight</key><styleUrl>#s1</styleUrl></Pair></StyleMap>
    <Placemark><name>top</name><Point><coordinates> -115.1,36.2,0 </coordinates></Point></Placemark>
    <Folder><name>A</name>
      <Folder><name>B</name>
        <Folder><name>C</name>
          <Placemark><name>deep</name><styleUrl>#m1</styleUrl>
            <Style><IconStyle><scale>2</scale></IconStyle></Style>
            <description><![CDATA[<b>x</b>]]> &amp; more</description>
            <ExtendedData>
              <Data name="gx_media_links"><value>https://e.org/1.jpg
                 https://e.org/2.mp4</value></Data>
              <Data name="k1"><value>v1</value></Data>
              <SchemaData schemaUrl="#s"><SimpleData name="k2">v2</SimpleData></SchemaData>
              <Data name="k3"><value></value></Data>
            </ExtendedData>
            <LineString><coordinates>1,2 3,4
              5,6</coordinates></LineString>
          </Placemark>
        </Folder>
      </Folder>
      <Placemark><name>poly</name><Polygon>
        <outerBoundaryIs><LinearRing><coordinates>0,0 4,0 4,4 0,4 0,0</coordinates></LinearRing></outerBoundaryIs>
        <innerBoundaryIs><LinearRing><coordinates>1,1 2,1 2,2 1,2 1,1</coordinates></LinearRing></innerBoundaryIs>
        <innerBoundaryIs><LinearRing><coordinates>3,3 3.5,3 3.5,3.5 3,3.5 3,3</coordinates></LinearRing></innerBoundaryIs>
      </Polygon></Placemark>
    </Folder>`)
  const items = await collect([xml])
  t.same(items.filter((i) => i.kind === 'style').map((i) => i.kind === 'style' && i.style), [
    { id: 's1', kind: 'Style', definition: { 'IconStyle.scale': '1.2', 'IconStyle.Icon.href': 'http://x/i.png' } },
    { id: 'm1', kind: 'StyleMap', definition: { 'Pair.normal': '#s1', 'Pair.highlight': '#s1' } }
  ], 'inline placemark styles are not records')
  t.same(items.filter((i) => i.kind === 'folder').map((i) => i.kind === 'folder' && i.folder.path), [['A'], ['A', 'B'], ['A', 'B', 'C']])
  const [top, deep, poly] = placemarks(items)
  t.same(top.folderPath, [], 'document level; the Document name is not a folder')
  t.same(top.geometry, { type: 'Point', coordinates: [-115.1, 36.2] })
  t.equal(top.coordinatesRaw, '-115.1,36.2,0')
  t.same(deep.folderPath, ['A', 'B', 'C'])
  t.equal(deep.styleId, 'm1')
  t.equal(deep.description, '<b>x</b> & more')
  t.same(deep.mediaLinks, ['https://e.org/1.jpg', 'https://e.org/2.mp4'])
  t.same(deep.extendedData, [{ key: 'k1', value: 'v1' }, { key: 'k2', value: 'v2' }, { key: 'k3', value: '' }])
  t.same(deep.geometry, { type: 'LineString', coordinates: [[1, 2], [3, 4], [5, 6]] })
  t.equal(deep.coordinatesRaw, '1,2 3,4 5,6')
  t.same(poly.folderPath, ['A'])
  t.equal(poly.geometry.type, 'Polygon')
  t.equal(poly.geometry.coordinates.length, 3, 'outer ring and two holes')
  t.equal(poly.coordinatesRaw, '0,0 4,0 4,4 0,4 0,0')
})

t.test('names keep no-break spaces and inner line breaks', async (t) => {
  const [p] = placemarks(await collect([doc('<Placemark><name>\n 10/1/2017 \u00a010:09:48 PM - a\nb </name><Point><coordinates>1,1</coordinates></Point></Placemark>')]))
  t.equal(p.name, '10/1/2017 \u00a010:09:48 PM - a\nb')
})

t.test('skipped placemarks carry a reason', async (t) => {
  const items = await collect([doc(`
    <Placemark><name>multi</name><MultiGeometry><Point><coordinates>1,1</coordinates></Point></MultiGeometry></Placemark>
    <Placemark><name>model</name><Model><Location/></Model></Placemark>
    <Placemark><name>track</name><gx:Track><when>2020-01-01</when></gx:Track></Placemark>
    <Placemark><name>none</name></Placemark>
    <Placemark><name>bad</name><Point><coordinates>200,1</coordinates></Point></Placemark>
    <Placemark><name>short</name><LineString><coordinates>1,1</coordinates></LineString></Placemark>
    <Placemark><name>nan</name><Point><coordinates>a,b</coordinates></Point></Placemark>`)])
  t.same(items.map((i) => i.kind === 'skipped' && [i.reason, i.name]), [
    ['MultiGeometry', 'multi'], ['Model', 'model'], ['Track', 'track'], ['no geometry', 'none'],
    ['invalid coordinates', 'bad'], ['invalid coordinates', 'short'], ['invalid coordinates', 'nan']
  ])
})

t.test('chunk boundaries do not matter, multibyte characters included', async (t) => {
  const xml = Buffer.from(doc('<Folder><name>Café ☕</name><Placemark><name>Ünïcödé 🚀</name><Point><coordinates>1.5,2.5</coordinates></Point></Placemark></Folder>'))
  const whole = await collect([xml])
  t.same(await collect(pieces(xml, 1)), whole)
  t.same(await collect(pieces(xml, 7)), whole)
  t.equal(placemarks(whole)[0].name, 'Ünïcödé 🚀')
})

t.test('malformed input is a KmlError with a position', async (t) => {
  await t.rejects(collect(['<kml><Document><Placemark></Document></kml>']), KmlError)
  await t.rejects(collect(['<kml>\n<Document>\n<Placemark></Document></kml>']), { message: /line 3/ })
  await t.rejects(collect(['<html><body/></html>']), { name: 'KmlError', message: 'not a KML document: root element is <html>' })
  await t.rejects(collect(['<kml><Document><Placemark>']), KmlError, 'unclosed at the end')
  await t.rejects(collect(['']), KmlError, 'empty')
})

t.test('sources: KML, KMZ, and their failures', async (t) => {
  const dir = t.testdir({})
  const kml = doc('<Placemark><name>in zip</name><Point><coordinates>1,1</coordinates></Point></Placemark>')
  const other = doc('<Placemark><name>other</name><Point><coordinates>1,1</coordinates></Point></Placemark>')
  writeFileSync(join(dir, 'a.kmz'), makeZip([{ name: 'files/x.kml', data: other }, { name: 'doc.kml', data: kml }]))
  writeFileSync(join(dir, 'b.kmz'), makeZip([{ name: 'images/a.png', data: 'png' }, { name: 'Sub/Map.KML', data: other }]))
  writeFileSync(join(dir, 'empty.kmz'), makeZip([{ name: 'images/a.png', data: 'png' }]))
  writeFileSync(join(dir, 'broken.kmz'), Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(40)]))
  writeFileSync(join(dir, 'plain.kml'), kml)

  const names = async (path: string) => {
    const src = await openKmlSource(path)
    try { return placemarks(await collect(src.chunks)).map((p) => p.name) } finally { src.close() }
  }
  t.same(await names(join(dir, 'a.kmz')), ['in zip'], 'doc.kml wins')
  t.same(await names(join(dir, 'b.kmz')), ['other'], 'else the first .kml')
  t.same(await names(join(dir, 'plain.kml')), ['in zip'])
  await t.rejects(openKmlSource(join(dir, 'empty.kmz')), new KmlSourceError(`no .kml file inside ${join(dir, 'empty.kmz')}`))
  await t.rejects(openKmlSource(join(dir, 'broken.kmz')), KmlSourceError)
  await t.rejects(openKmlSource(join(dir, 'missing.kml')), new KmlSourceError(`file not found: ${join(dir, 'missing.kml')}`))
  await t.rejects(openKmlSource(dir), KmlSourceError)
})

t.test('the sample dataset', async (t) => {
  const items = await collect([readFileSync(join(projectRoot, 'db/sample/sample.kml'))])
  const count = (f: (i: KmlItem) => boolean) => items.filter(f).length
  t.equal(count((i) => i.kind === 'placemark' && i.placemark.geometry.type === 'Point'), 26)
  t.equal(count((i) => i.kind === 'placemark' && i.placemark.geometry.type === 'LineString'), 6)
  t.equal(count((i) => i.kind === 'placemark' && i.placemark.geometry.type === 'Polygon'), 4)
  t.equal(count((i) => i.kind === 'style' && i.style.kind === 'Style'), 6)
  t.equal(count((i) => i.kind === 'style' && i.style.kind === 'StyleMap'), 3)
  t.equal(count((i) => i.kind === 'folder'), 7)
  t.same(items.flatMap((i) => (i.kind === 'skipped' ? [i.reason] : [])), ['MultiGeometry'])
  t.ok(items.some((i) => i.kind === 'folder' && i.folder.path.length === 3), 'folders nest three deep')
})

t.test('the Vegas KMZ', { skip: vegasAbsent }, async (t) => {
  const src = await openKmlSource(vegasKmz)
  const items = await collect(src.chunks)
  src.close()
  const types: Record<string, number> = {}
  for (const p of placemarks(items)) types[p.geometry.type] = (types[p.geometry.type] ?? 0) + 1
  t.same(types, { Point: 420, LineString: 50, Polygon: 75 })
  t.equal(items.filter((i) => i.kind === 'style' && i.style.kind === 'Style').length, 44)
  t.equal(items.filter((i) => i.kind === 'style' && i.style.kind === 'StyleMap').length, 18)
  t.equal(items.filter((i) => i.kind === 'folder').length, 9)
  t.equal(items.filter((i) => i.kind === 'skipped').length, 0)
})
