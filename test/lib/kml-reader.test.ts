import t from 'tap'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import zlib from 'node:zlib'
import { readKml, KmlError, KML_LIMITS, type DecodeReport, type KmlItem, type KmlLimits, type KmlPlacemark, type KmlStyle } from '../../lib/kml/reader.ts'
import { openKmlSource, KmlSourceError } from '../../lib/kml/source.ts'

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const samplePath = path.join(projectRoot, 'db', 'sample', 'sample.kml')
const vegasPath = path.resolve(projectRoot, '..', 'shared', 'data', 'vegas-shooting-map.kmz')
const NBSP = '\u00a0'

async function * fromArray (parts: (string | Buffer)[]): AsyncGenerator<string | Buffer> {
  for (const part of parts) yield part
}

async function collect (input: string | (string | Buffer)[] | AsyncIterable<string | Buffer>): Promise<KmlItem[]> {
  const source = typeof input === 'string' ? fromArray([input]) : Array.isArray(input) ? fromArray(input) : input
  const items: KmlItem[] = []
  for await (const item of readKml(source)) items.push(item)
  return items
}

function placemarks (items: KmlItem[]): KmlPlacemark[] {
  return items.flatMap((i) => (i.kind === 'placemark' ? [i.placemark] : []))
}

function styles (items: KmlItem[]): KmlStyle[] {
  return items.flatMap((i) => (i.kind === 'style' ? [i.style] : []))
}

function byName (items: KmlItem[], name: string): KmlPlacemark {
  const found = placemarks(items).find((p) => p.name === name)
  if (!found) throw new Error(`no placemark named ${JSON.stringify(name)}`)
  return found
}

function slices (data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, i + size))
  return out
}

async function expectKmlError (input: string | (string | Buffer)[] | AsyncIterable<string | Buffer>, limits?: Partial<KmlLimits>): Promise<KmlError> {
  try {
    const source = typeof input === 'string' ? fromArray([input]) : Array.isArray(input) ? fromArray(input) : input
    for await (const item of readKml(source, { limits })) void item
  } catch (err) {
    if (err instanceof KmlError) return err
    throw err
  }
  throw new Error('expected a KmlError')
}

const kml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2">
<Document>
<name>Test document</name>
${body}
</Document>
</kml>
`

t.test('geometries: Point, LineString, Polygon with holes', async (t) => {
  const items = await collect(kml(`
  <Placemark><name>pt</name><Point><coordinates> -115.17178861234567,36.0936576,0 </coordinates></Point></Placemark>
  <Placemark><name>pt2d</name><Point><coordinates>12.5,-45</coordinates></Point></Placemark>
  <Placemark><name>line</name><LineString><tessellate>1</tessellate><coordinates>
      -115.1,36.1,0
${'\t'}-115.2,36.2,10   -115.3,36.3
  </coordinates></LineString></Placemark>
  <Placemark><name>poly</name><Polygon>
    <outerBoundaryIs><LinearRing><coordinates>0,0,0 10,0,0 10,10,0 0,10,0 0,0,0</coordinates></LinearRing></outerBoundaryIs>
    <innerBoundaryIs><LinearRing><coordinates>1,1 2,1 2,2 1,1</coordinates></LinearRing></innerBoundaryIs>
    <innerBoundaryIs><LinearRing><coordinates>5,5 6,5 6,6 5,5</coordinates></LinearRing></innerBoundaryIs>
  </Polygon></Placemark>
  <Placemark><name>plain polygon</name><Polygon><outerBoundaryIs><LinearRing>
    <coordinates>1,1 2,1 2,2 1,1</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
  `))
  t.equal(items.filter((i) => i.kind === 'skipped').length, 0)
  const pt = byName(items, 'pt')
  t.same(pt.geometry, { type: 'Point', coordinates: [-115.17178861234567, 36.0936576] }, 'altitude dropped, full precision kept')
  t.equal(pt.coordinatesRaw, '-115.17178861234567,36.0936576,0')
  t.same(byName(items, 'pt2d').geometry, { type: 'Point', coordinates: [12.5, -45] })

  const line = byName(items, 'line')
  t.same(line.geometry, { type: 'LineString', coordinates: [[-115.1, 36.1], [-115.2, 36.2], [-115.3, 36.3]] })
  t.equal(line.coordinatesRaw, '-115.1,36.1,0 -115.2,36.2,10 -115.3,36.3', 'whitespace runs collapsed')

  const poly = byName(items, 'poly')
  t.same(poly.geometry, {
    type: 'Polygon',
    coordinates: [
      [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]],
      [[1, 1], [2, 1], [2, 2], [1, 1]],
      [[5, 5], [6, 5], [6, 6], [5, 5]]
    ]
  })
  t.equal(poly.coordinatesRaw, '0,0,0 10,0,0 10,10,0 0,10,0 0,0,0', 'outer ring only')
  t.same(byName(items, 'plain polygon').geometry.coordinates, [[[1, 1], [2, 1], [2, 2], [1, 1]]])
})

t.test('folder paths and folder records', async (t) => {
  const items = await collect(kml(`
  <Placemark><name>at document level</name><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Folder>
    <name>Downtown</name>
    <Folder>
      <name>Fremont Street</name>
      <Folder>
        <name>Night Walks</name>
        <Placemark><name>deep</name><Point><coordinates>2,2</coordinates></Point></Placemark>
      </Folder>
      <Placemark><name>middle</name><Point><coordinates>3,3</coordinates></Point></Placemark>
    </Folder>
    <Placemark><name>shallow</name><Point><coordinates>4,4</coordinates></Point></Placemark>
  </Folder>
  <Folder><name>Empty</name></Folder>
  <Folder><name>  Spaced${NBSP}</name><Document><name>Nested document</name>
    <Placemark><name>in nested document</name><Point><coordinates>5,5</coordinates></Point></Placemark>
  </Document></Folder>
  <Placemark><name>document again</name><Point><coordinates>6,6</coordinates></Point></Placemark>
  `))
  t.same(byName(items, 'at document level').folderPath, [], 'the Document name is not a folder')
  t.same(byName(items, 'deep').folderPath, ['Downtown', 'Fremont Street', 'Night Walks'])
  t.same(byName(items, 'middle').folderPath, ['Downtown', 'Fremont Street'])
  t.same(byName(items, 'shallow').folderPath, ['Downtown'])
  t.same(byName(items, 'in nested document').folderPath, ['Spaced'], 'nested Document adds nothing')
  t.same(byName(items, 'document again').folderPath, [])

  const folders = items.flatMap((i) => (i.kind === 'folder' ? [i.folder] : []))
  t.same(folders, [
    { name: 'Downtown', path: ['Downtown'] },
    { name: 'Fremont Street', path: ['Downtown', 'Fremont Street'] },
    { name: 'Night Walks', path: ['Downtown', 'Fremont Street', 'Night Walks'] },
    { name: 'Empty', path: ['Empty'] },
    { name: 'Spaced', path: ['Spaced'] }
  ], 'each folder once, parents first, empty folders included')
  const kinds = items.map((i) => (i.kind === 'placemark' ? i.placemark.name : `folder:${i.kind === 'folder' ? i.folder.name : i.kind}`))
  t.ok(kinds.indexOf('folder:Night Walks') < kinds.indexOf('deep'), 'a folder comes before its placemarks')
})

t.test('a document without <Document>, prefixed and prefix-less roots', async (t) => {
  const bare = await collect('<kml><Placemark><name>a</name><Point><coordinates>1,2</coordinates></Point></Placemark></kml>')
  t.same(placemarks(bare).map((p) => [p.name, p.folderPath]), [['a', []]])
  const prefixed = await collect(`<k:kml xmlns:k="http://www.opengis.net/kml/2.2"><k:Folder><k:name>F</k:name>
    <k:Placemark><k:name>b</k:name><k:Point><k:coordinates>3,4</k:coordinates></k:Point></k:Placemark></k:Folder></k:kml>`)
  t.same(placemarks(prefixed).map((p) => [p.name, p.folderPath, p.geometry]), [['b', ['F'], { type: 'Point', coordinates: [3, 4] }]])
  const undeclared = await collect('<kml><Placemark><name>c</name><gx:Track><gx:coord>1 2 3</gx:coord></gx:Track></Placemark></kml>')
  t.same(undeclared, [{ kind: 'skipped', reason: 'Track', name: 'c', line: 1 }], 'an undeclared gx: prefix is tolerated')
})

t.test('styleUrl, names and descriptions', async (t) => {
  const items = await collect(kml(`
  <Placemark><name>hash</name><styleUrl>#icon-1</styleUrl><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>no hash</name><styleUrl> shared.kml#icon-2 </styleUrl><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>cdata</name><description><![CDATA[<a href="https://example.org/v">video</a><br>]]></description><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>mixed</name><description>
    Opened 1966. <![CDATA[<b>Valet</b>]]> &amp; more </description><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>empty</name><description>  </description><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>escaped</name><description>&lt;b&gt;bold&lt;/b&gt;</description><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name>${NBSP} 10/1/2017 ${NBSP}10:09:48 PM - 5, 6 -
Ladies in Car
 Mandalay Bay Road *

</name><Point><coordinates>1,1</coordinates></Point></Placemark>
  <Placemark><name><![CDATA[cdata ]]>name &amp; text</name><Point><coordinates>1,1</coordinates></Point></Placemark>
  `))
  t.equal(byName(items, 'hash').styleId, 'icon-1')
  t.equal(byName(items, 'no hash').styleId, 'shared.kml#icon-2', 'only a leading # is removed')
  t.equal(byName(items, '').styleId, null, 'a placemark without name or styleUrl')
  t.equal(byName(items, 'cdata').description, '<a href="https://example.org/v">video</a><br>')
  t.equal(byName(items, 'mixed').description, 'Opened 1966. <b>Valet</b> & more', 'text and CDATA pieces concatenated')
  t.equal(byName(items, 'empty').description, null)
  t.equal(byName(items, 'hash').description, null)
  t.equal(byName(items, 'escaped').description, '<b>bold</b>')
  const timed = placemarks(items).find((p) => p.name.startsWith('10/1/2017'))
  t.equal(timed?.name, `10/1/2017 ${NBSP}10:09:48 PM - 5, 6 -\nLadies in Car\n Mandalay Bay Road *`, 'ends trimmed (no-break spaces too), inside kept')
  t.ok(byName(items, 'cdata name & text'))
})

t.test('style records', async (t) => {
  const items = await collect(kml(`
  <Style id="icon-normal"><IconStyle><color>ff0000ff</color><scale>1</scale><Icon><href>images/icon-1.png</href></Icon>
    <hotSpot x="32" xunits="pixels" y="64" yunits="insetPixels"/></IconStyle><LabelStyle><scale>0</scale></LabelStyle>
    <BalloonStyle><text><![CDATA[<h3>$[name]</h3>]]></text></BalloonStyle></Style>
  <StyleMap id="icon"><Pair><key>normal</key><styleUrl>#icon-normal</styleUrl></Pair>
    <Pair><key>highlight</key><styleUrl>#icon-highlight</styleUrl></Pair></StyleMap>
  <Style><IconStyle><scale>2</scale></IconStyle></Style>
  <Folder><name>F</name>
    <Style id="poly"><LineStyle><width>1.5</width></LineStyle><PolyStyle><fill>1</fill><outline>0</outline></PolyStyle></Style>
    <Placemark><name>inline</name>
      <Style id="inline-with-id"><IconStyle><scale>3</scale></IconStyle></Style>
      <Style><LineStyle><width>9</width></LineStyle></Style>
      <StyleMap id="inline-map"><Pair><key>normal</key><styleUrl>#x</styleUrl></Pair></StyleMap>
      <Point><coordinates>1,1</coordinates></Point></Placemark>
  </Folder>
  `))
  t.same(styles(items), [
    {
      id: 'icon-normal',
      kind: 'Style',
      definition: {
        'IconStyle.color': 'ff0000ff',
        'IconStyle.scale': '1',
        'IconStyle.Icon.href': 'images/icon-1.png',
        'IconStyle.hotSpot@x': '32',
        'IconStyle.hotSpot@xunits': 'pixels',
        'IconStyle.hotSpot@y': '64',
        'IconStyle.hotSpot@yunits': 'insetPixels',
        'LabelStyle.scale': '0',
        'BalloonStyle.text': '<h3>$[name]</h3>'
      }
    },
    { id: 'icon', kind: 'StyleMap', definition: { 'Pair.normal': '#icon-normal', 'Pair.highlight': '#icon-highlight' } },
    { id: 'poly', kind: 'Style', definition: { 'LineStyle.width': '1.5', 'PolyStyle.fill': '1', 'PolyStyle.outline': '0' } }
  ], 'styles without id and styles inside a placemark are not records')
  t.equal(byName(items, 'inline').styleId, null)
  t.same(byName(items, 'inline').geometry, { type: 'Point', coordinates: [1, 1] })
})

t.test('media links and extended data', async (t) => {
  const items = await collect(kml(`
  <Placemark><name>data</name>
    <ExtendedData>
      <Data name="category"><displayName>Category</displayName><value> landmark </value></Data>
      <Data name="gx_media_links"><value>https://example.org/a.mp4 https://example.org/b.jpg
        https://example.org/c.jpg</value></Data>
      <SchemaData schemaUrl="#venue">
        <SimpleData name="operator">MGM</SimpleData>
        <SimpleData name="capacity"></SimpleData>
      </SchemaData>
      <Data name="empty"><value/></Data>
      <Data name="novalue"></Data>
      <Data name="gx_media_links"><value>https://example.org/d.png</value></Data>
    </ExtendedData>
    <Point><coordinates>1,1</coordinates></Point>
  </Placemark>
  <Placemark><name>none</name><Point><coordinates>1,1</coordinates></Point></Placemark>
  `))
  const p = byName(items, 'data')
  t.same(p.mediaLinks, ['https://example.org/a.mp4', 'https://example.org/b.jpg', 'https://example.org/c.jpg', 'https://example.org/d.png'])
  t.same(p.extendedData, [
    { key: 'category', value: 'landmark' },
    { key: 'operator', value: 'MGM' },
    { key: 'capacity', value: '' },
    { key: 'empty', value: '' },
    { key: 'novalue', value: '' }
  ], 'document order, gx_media_links kept out')
  t.same(byName(items, 'none').mediaLinks, [])
  t.same(byName(items, 'none').extendedData, [])
})

t.test('skipped placemarks carry a reason, the name and the start line', async (t) => {
  const doc = `<kml>
<Placemark><name>multi</name><MultiGeometry><Point><coordinates>1,1</coordinates></Point></MultiGeometry></Placemark>
<Placemark><name>model</name><Model><Location><longitude>1</longitude><latitude>1</latitude></Location></Model></Placemark>
<Placemark><name>track</name><gx:Track><when>2017-10-01T22:00:00Z</when><gx:coord>1 1 0</gx:coord></gx:Track></Placemark>
<Placemark><name>multitrack</name><gx:MultiTrack><gx:Track/></gx:MultiTrack></Placemark>
<Placemark><name>nothing</name><description>no geometry here</description></Placemark>
<Placemark><name>two points</name><Point><coordinates>1,1 2,2</coordinates></Point></Placemark>
<Placemark><name>empty point</name><Point><coordinates> </coordinates></Point></Placemark>
<Placemark><name>short line</name><LineString><coordinates>1,1</coordinates></LineString></Placemark>
<Placemark><name>short ring</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 1,0 0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
<Placemark><name>short hole</name><Polygon><outerBoundaryIs><LinearRing><coordinates>0,0 9,0 9,9 0,0</coordinates></LinearRing></outerBoundaryIs>
  <innerBoundaryIs><LinearRing><coordinates>1,1 2,1 1,1</coordinates></LinearRing></innerBoundaryIs></Polygon></Placemark>
<Placemark><name>no outer</name><Polygon><innerBoundaryIs><LinearRing><coordinates>1,1 2,1 2,2 1,1</coordinates></LinearRing></innerBoundaryIs></Polygon></Placemark>
<Placemark><name>lat 91</name><Point><coordinates>1,91</coordinates></Point></Placemark>
<Placemark><name>lon 181</name><Point><coordinates>181,1</coordinates></Point></Placemark>
<Placemark><name>text</name><Point><coordinates>east,north</coordinates></Point></Placemark>
<Placemark><name>missing lat</name><Point><coordinates>1,</coordinates></Point></Placemark>
<Placemark><name>four values</name><Point><coordinates>1,2,3,4</coordinates></Point></Placemark>
<Placemark><name>infinite</name><LineString><coordinates>1,1 Infinity,2</coordinates></LineString></Placemark>
<Placemark>
  <Point><coordinates>NaN,1</coordinates></Point></Placemark>
<Placemark><name>edges are fine</name><LineString><coordinates>-180,-90 180,90</coordinates></LineString></Placemark>
<Placemark><name>spaces after commas</name><Point><coordinates>-115.1, 36.2, 0</coordinates></Point></Placemark>
</kml>`
  const items = await collect(doc)
  const skipped = items.flatMap((i) => (i.kind === 'skipped' ? [[i.reason, i.name, i.line]] : []))
  t.same(skipped, [
    ['MultiGeometry', 'multi', 2],
    ['Model', 'model', 3],
    ['Track', 'track', 4],
    ['Track', 'multitrack', 5],
    ['no geometry', 'nothing', 6],
    ['invalid coordinates', 'two points', 7],
    ['invalid coordinates', 'empty point', 8],
    ['invalid coordinates', 'short line', 9],
    ['invalid coordinates', 'short ring', 10],
    ['invalid coordinates', 'short hole', 11],
    ['invalid coordinates', 'no outer', 13],
    ['invalid coordinates', 'lat 91', 14],
    ['invalid coordinates', 'lon 181', 15],
    ['invalid coordinates', 'text', 16],
    ['invalid coordinates', 'missing lat', 17],
    ['invalid coordinates', 'four values', 18],
    ['invalid coordinates', 'infinite', 19],
    ['invalid coordinates', '', 20]
  ])
  t.same(placemarks(items).map((p) => [p.name, p.geometry.coordinates]), [
    ['edges are fine', [[-180, -90], [180, 90]]],
    ['spaces after commas', [-115.1, 36.2]]
  ])
})

t.test('other features are reported, not dropped', async (t) => {
  const items = await collect(`<kml><Document>
<GroundOverlay><name>Aerial photo</name><Icon><href>a.jpg</href></Icon></GroundOverlay>
<NetworkLink><name>Live feed</name></NetworkLink>
</Document></kml>`)
  t.same(items, [
    { kind: 'skipped', reason: 'GroundOverlay', name: 'Aerial photo', line: 2 },
    { kind: 'skipped', reason: 'NetworkLink', name: 'Live feed', line: 3 }
  ])
})

t.test('chunk boundaries do not change the result', async (t) => {
  // 'è' is 2 bytes, U+00A0 2 bytes, '🎡' 4 bytes in UTF-8: small chunks split all of them.
  const doc = kml(`
  <Style id="s"><IconStyle><scale>1</scale></IconStyle></Style>
  <Folder><name>Porte-cochère</name>
    <Placemark><name>10/1/2017 ${NBSP}10:09:48 PM - High Roller 🎡</name>
      <description><![CDATA[<b>Wheel</b> ]]>ride &amp; view</description>
      <styleUrl>#s</styleUrl>
      <ExtendedData><Data name="gx_media_links"><value>https://example.org/a https://example.org/b</value></Data>
        <SchemaData schemaUrl="#v"><SimpleData name="note">naïve café</SimpleData></SchemaData></ExtendedData>
      <LineString><coordinates>-115.16820,36.11750,0
        -115.16830,36.11760,0</coordinates></LineString></Placemark>
  </Folder>`)
  // Pad so that the 4-byte character straddles a 7-byte boundary.
  let bytes = Buffer.from(doc, 'utf8')
  for (let pad = 1; bytes.indexOf(Buffer.from('🎡')) % 7 < 4; pad++) bytes = Buffer.from(doc.replace('<Document>', `<Document>${' '.repeat(pad)}`), 'utf8')
  const whole = await collect([bytes])
  t.equal(placemarks(whole).length, 1)
  t.equal(placemarks(whole)[0].name, `10/1/2017 ${NBSP}10:09:48 PM - High Roller 🎡`)
  t.same(placemarks(whole)[0].extendedData, [{ key: 'note', value: 'naïve café' }])
  const wheel = bytes.indexOf(Buffer.from('🎡'))
  t.not(Math.floor(wheel / 7), Math.floor((wheel + 3) / 7), 'the 4-byte character straddles a 7-byte boundary')
  t.same(await collect(slices(bytes, 1)), whole, 'one byte at a time')
  t.same(await collect(slices(bytes, 7)), whole, 'seven bytes at a time')
  const text = bytes.toString('utf8')
  const surrogate = text.indexOf('🎡') + 1
  t.same(await collect([text.slice(0, surrogate), text.slice(surrogate)]), whole, 'string chunks split inside a surrogate pair')
  t.same(await collect([...text]), whole, 'one character at a time')
})

t.test('items are yielded while the input is still arriving', async (t) => {
  let pulled = 0
  async function * source (): AsyncGenerator<string> {
    pulled++
    yield '<kml><Placemark><name>first</name><Point><coordinates>1,1</coordinates></Point></Placemark>'
    pulled++
    yield '<Placemark><name>second</name><Point><coordinates>2,2</coordinates></Point></Placemark></kml>'
  }
  const names: [string, number][] = []
  for await (const item of readKml(source())) if (item.kind === 'placemark') names.push([item.placemark.name, pulled])
  t.same(names, [['first', 1], ['second', 2]])
})

t.test('a large single chunk is handled in slices', async (t) => {
  const one = '<Placemark><name>p</name><Point><coordinates>-115.1,36.1</coordinates></Point></Placemark>\n'
  const doc = `<kml><Document>${one.repeat(5000)}</Document></kml>`
  let seen = 0
  for await (const item of readKml(fromArray([doc]))) if (item.kind === 'placemark') seen++
  t.equal(seen, 5000)
})

t.test('malformed XML is a KmlError with a line number', async (t) => {
  const mismatched = await expectKmlError('<kml>\n<Document>\n  <Placemark>\n    <name>x</name>\n  </Document>\n</kml>')
  t.equal(mismatched.line, 5)
  t.match(mismatched.message, /^malformed XML at line 5, column \d+: unclosed tag <Placemark>$/)
  t.equal(mismatched.name, 'KmlError')

  const badEntity = await expectKmlError('<kml>\n<Placemark><name>caf&eacute;</name></Placemark></kml>')
  t.equal(badEntity.line, 2)
  t.match(badEntity.message, /^malformed XML at line 2, column \d+: /)
  t.notMatch(badEntity.message, /\n/)

  const stray = await expectKmlError('<kml></Folder></kml>')
  t.equal(stray.message, 'malformed XML at line 1, column 14: unclosed tag <kml>')
  t.equal(stray.column, 14)

  const chunked = await expectKmlError(slices(Buffer.from('<kml>\n\n<Placemark><name>a</name>\n<Point><coordinates>1,1</coordinates></Point></Placemark>\n<name a=1/></kml>'), 3))
  t.equal(chunked.line, 5, 'line counting survives chunking')
})

t.test('a document that is not KML', async (t) => {
  const gpx = await expectKmlError('<?xml version="1.0"?>\n<gpx version="1.1"><trk/></gpx>')
  t.equal(gpx.message, 'not a KML document: root element is <gpx>')
  const html = await expectKmlError('<html><body>not here</body></html>')
  t.equal(html.message, 'not a KML document: root element is <html>')
  const empty = await expectKmlError('')
  t.match(empty.message, /no root element/)
  const text = await expectKmlError('just some text')
  t.match(text.message, /^malformed XML at line 1/)
})

t.test('an unclosed document is a KmlError', async (t) => {
  const cut = await expectKmlError(kml('<Placemark><name>a</name><Point><coordinates>1,1</coordinates></Point></Placemark>').replace('</Document>\n</kml>\n', ''))
  t.match(cut.message, /^malformed XML at line \d+, column \d+: unexpected end of input, unclosed tag <Document>$/)
  const midTag = await expectKmlError('<kml><Document><Placemark><name>a</na')
  t.match(midTag.message, /unexpected end of input/)
  const afterRoot = await expectKmlError('<kml></kml><!-- unterminated')
  t.match(afterRoot.message, /^malformed XML at line 1/)
})

t.test('the sample dataset', async (t) => {
  const source = await openKmlSource(samplePath)
  t.teardown(() => source.close())
  t.equal(source.kind, 'kml')
  const items = await collect(source.chunks)
  const geometry: Record<string, number> = {}
  for (const p of placemarks(items)) geometry[p.geometry.type] = (geometry[p.geometry.type] ?? 0) + 1
  t.same(geometry, { Point: 43, LineString: 8, Polygon: 6 })
  t.equal(placemarks(items).length, 57)
  const all = styles(items)
  t.equal(all.filter((s) => s.kind === 'Style').length, 7)
  t.equal(all.filter((s) => s.kind === 'StyleMap').length, 3)
  t.same(items.flatMap((i) => (i.kind === 'folder' ? [i.folder.path.join(' > ')] : [])), [
    'Las Vegas Strip',
    'Downtown',
    'Downtown > Fremont Street',
    'Downtown > Fremont Street > Night Walks',
    'Red Rock Canyon',
    'Lake Mead & Hoover Dam',
    'Around the World',
    'Unsorted'
  ])
  t.same(items.flatMap((i) => (i.kind === 'skipped' ? [[i.reason, i.name]] : [])), [['MultiGeometry', 'Las Vegas Monorail stations']])
  t.equal(placemarks(items).filter((p) => p.folderPath.length === 0).length, 4, 'document-level placemarks')

  const timed = placemarks(items).filter((p) => /^(\d{1,2}\/\d{1,2}\/\d{4}|\d{4}-\d{2}-\d{2}T)/.test(p.name)).map((p) => p.name)
  t.same(timed, [
    `10/1/2017 ${NBSP}10:05:20 PM - Festival grounds main stage`,
    `10/1/2017 ${NBSP}10:09:48 PM - Traffic stopped on Las Vegas Boulevard`,
    `10/1/2017 ${NBSP}10:12:33 PM - Rideshare pickup moved\n to the Luxor porte-cochère`,
    `10/1/2017${NBSP} 10:31:05 PM - Crowd waits at the Tropicana`,
    '10/1/2017 22:15 - Tropicana Avenue closed to traffic',
    '10/1/2017 ~9:40 PM - Headliner takes the stage',
    '2017-10-01T22:20:00-07:00 - Taxis rerouted via Koval Lane',
    '10/2/2017 - Vigil at the Welcome sign',
    `10/7/2017 ${NBSP}8:45:10 PM - Night walk starts at the Plaza`,
    `10/7/2017 ${NBSP}9:20 PM - Container Park mantis flames`,
    '2017-10-02T06:30:00Z - Late swim at Boulder Beach'
  ])

  t.same(byName(items, 'Null Island').geometry, { type: 'Point', coordinates: [0, 0] })
  t.same(byName(items, 'West of the date line (Vanua Levu)').geometry.coordinates, [179.5, -16.6])
  t.same(byName(items, 'East of the date line (Lau waters)').geometry.coordinates, [-179.5, -16.9])
  const ferry = byName(items, 'Savusavu to Taveuni ferry').geometry.coordinates as [number, number][]
  t.same(ferry[ferry.length - 1], [179.9953, -16.7981])
  const holes = placemarks(items).filter((p) => p.geometry.type === 'Polygon' && p.geometry.coordinates.length > 1).map((p) => p.name)
  t.same(holes, ['Las Vegas Village festival grounds', 'Calico Basin'])
  t.equal(byName(items, 'Las Vegas Village festival grounds').geometry.coordinates.length, 3)
  const withMedia = placemarks(items).filter((p) => p.mediaLinks.length > 0)
  t.equal(withMedia.length, 4)
  t.equal(withMedia.filter((p) => p.mediaLinks.length === 2).length, 3)
  t.same(byName(items, 'Welcome to Fabulous Las Vegas sign').extendedData, [{ key: 'category', value: 'landmark' }, { key: 'built', value: '1959' }])
  t.same(byName(items, 'High Roller observation wheel').extendedData.map((d) => d.key), ['height_m', 'operator', 'capacity', 'opened'])
  t.equal(byName(items, 'T-Mobile Arena').description, 'Opened 2016. <b>Toshiba Plaza</b> entrance on the east side.')
  t.equal(byName(items, 'T-Mobile Arena').styleId, null, 'inline style only')
  const referenced = new Set(placemarks(items).flatMap((p) => (p.styleId ? [p.styleId] : [])))
  const ids = new Set(all.map((s) => s.id))
  t.same([...referenced].filter((id) => !ids.has(id)), [], 'every styleUrl resolves')
})

// A stored (uncompressed) zip, enough for yauzl to read.
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
function crc32 (data: Buffer): number {
  const native = (zlib as { crc32?: (d: Buffer) => number }).crc32
  if (typeof native === 'function') return native(data) >>> 0
  let c = 0xffffffff
  for (const byte of data) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

function makeZip (entries: { name: string; data: string }[]): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8')
    const data = Buffer.from(entry.data, 'utf8')
    const crc = crc32(data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6)
    local.writeUInt16LE(0, 8)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(data.length, 18)
    local.writeUInt32LE(data.length, 22)
    local.writeUInt16LE(name.length, 26)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(0, 10)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(data.length, 20)
    central.writeUInt32LE(data.length, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    locals.push(local, name, data)
    centrals.push(central, name)
    offset += local.length + name.length + data.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}

const oneMark = (name: string) => `<kml><Placemark><name>${name}</name><Point><coordinates>-115.17,36.09</coordinates></Point></Placemark></kml>`

async function namesFrom (file: string): Promise<{ kind: string; entryName?: string; names: string[] }> {
  const source = await openKmlSource(file)
  try {
    const items = await collect(source.chunks)
    return { kind: source.kind, entryName: source.entryName, names: placemarks(items).map((p) => p.name) }
  } finally {
    source.close()
  }
}

async function sourceError (file: string): Promise<string> {
  try {
    const source = await openKmlSource(file)
    try {
      for await (const chunk of source.chunks) void chunk
    } finally {
      source.close()
    }
  } catch (err) {
    if (err instanceof KmlSourceError) return err.message
    throw err
  }
  throw new Error(`expected a KmlSourceError for ${file}`)
}

t.test('openKmlSource', async (t) => {
  const dir = t.testdir({})
  const file = (name: string, data: string | Buffer) => {
    const full = path.join(dir, name)
    writeFileSync(full, data)
    return full
  }
  const withDoc = file('map.kmz', makeZip([
    { name: 'images/icon-1.png', data: 'not really a png' },
    { name: 'other.kml', data: oneMark('other') },
    { name: 'doc.kml', data: oneMark('from doc.kml') }
  ]))
  t.same(await namesFrom(withDoc), { kind: 'kmz', entryName: 'doc.kml', names: ['from doc.kml'] }, 'doc.kml wins over an earlier .kml')

  const nested = file('nested.kmz', makeZip([
    { name: 'files/', data: '' },
    { name: 'files/Map.KML', data: oneMark('first kml, any case') },
    { name: 'files/later.kml', data: oneMark('later') },
    { name: 'sub/doc.kml', data: oneMark('doc.kml not at the root') }
  ]))
  t.same(await namesFrom(nested), { kind: 'kmz', entryName: 'files/Map.KML', names: ['first kml, any case'] })

  const disguised = file('really-a-zip.kml', makeZip([{ name: 'doc.kml', data: oneMark('zip by signature') }]))
  t.same((await namesFrom(disguised)).kind, 'kmz', 'the signature decides, not the extension')
  const plain = file('plain.kmz', oneMark('plain text after all'))
  t.same(await namesFrom(plain), { kind: 'kml', entryName: undefined, names: ['plain text after all'] })
  const utf = file('utf.kml', `\ufeff${oneMark('café 🎡')}`)
  t.same((await namesFrom(utf)).names, ['café 🎡'], 'a byte order mark is accepted')

  const noKml = file('nokml.kmz', makeZip([{ name: 'a.png', data: 'x' }, { name: 'readme.txt', data: 'y' }]))
  t.equal(await sourceError(noKml), `no .kml file inside ${noKml}`)
  const emptyZip = file('empty.kmz', makeZip([]))
  t.equal(await sourceError(emptyZip), `no .kml file inside ${emptyZip}`)
  const corrupt = file('corrupt.kmz', Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(200, 0x41)]))
  t.match(await sourceError(corrupt), new RegExp(`^cannot read KMZ ${corrupt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .+`))
  const missing = path.join(dir, 'missing.kmz')
  t.equal(await sourceError(missing), `file not found: ${missing}`)
  mkdirSync(path.join(dir, 'folder.kml'))
  t.equal(await sourceError(path.join(dir, 'folder.kml')), `not a file: ${path.join(dir, 'folder.kml')}`)

  const source = await openKmlSource(withDoc)
  source.close()
  source.close()
  t.pass('close may be called before reading, and twice')
})

t.test('the Vegas KMZ', { skip: existsSync(vegasPath) ? false : `${vegasPath} is absent` }, async (t) => {
  const source = await openKmlSource(vegasPath)
  t.teardown(() => source.close())
  t.equal(source.kind, 'kmz')
  t.equal(source.entryName, 'doc.kml')
  const counts = { placemark: 0, style: 0, folder: 0, skipped: 0 }
  const geometry: Record<string, number> = {}
  const styleKinds: Record<string, number> = {}
  const topFolders = new Set<string>()
  let nbspNames = 0
  for await (const item of readKml(source.chunks)) {
    counts[item.kind]++
    if (item.kind === 'placemark') {
      geometry[item.placemark.geometry.type] = (geometry[item.placemark.geometry.type] ?? 0) + 1
      if (item.placemark.name.includes(NBSP)) nbspNames++
      topFolders.add(item.placemark.folderPath[0] ?? '')
    } else if (item.kind === 'style') {
      styleKinds[item.style.kind] = (styleKinds[item.style.kind] ?? 0) + 1
    }
  }
  t.same(counts, { placemark: 545, style: 62, folder: 9, skipped: 0 })
  t.same(geometry, { Point: 420, LineString: 50, Polygon: 75 })
  t.same(styleKinds, { Style: 44, StyleMap: 18 })
  t.equal(topFolders.size, 9, 'every placemark sits in one of the 9 top-level folders')
  t.ok(nbspNames > 100, `${nbspNames} names keep their no-break spaces`)
})

// Lines of a document whose placemark sits under `depth` nested folders (the Document is one more level).
function nestedFolders (depth: number): string[] {
  const lines = ['<kml>', '<Document>']
  for (let i = 1; i <= depth; i++) lines.push(`<Folder><name>f${i}</name>`)
  lines.push('<Placemark><name>deep</name><Point><coordinates>1,1</coordinates></Point></Placemark>')
  for (let i = 1; i <= depth; i++) lines.push('</Folder>')
  lines.push('</Document>', '</kml>')
  return lines
}

t.test('Folder/Document nesting is limited, and refused quickly', async (t) => {
  t.equal(KML_LIMITS.maxFolderDepth, 64)
  const deepest = await collect(nestedFolders(63).join('\n'))
  t.same(placemarks(deepest)[0].folderPath, Array.from({ length: 63 }, (_, i) => `f${i + 1}`), '63 folders in the Document: 64 levels, accepted')
  t.equal(deepest.filter((i) => i.kind === 'folder').length, 63)

  const tooDeep = await expectKmlError(nestedFolders(64).join('\n'))
  t.equal(tooDeep.message, 'Folder/Document nesting deeper than 64 levels at line 66')
  t.equal(tooDeep.line, 66)

  // Ten thousand nested folders once took over a minute and 1.6 GB to import.
  const started = performance.now()
  const huge = await expectKmlError(nestedFolders(10_000).join('\n'))
  t.match(huge.message, /^Folder\/Document nesting deeper than 64 levels at line 66$/)
  t.ok(performance.now() - started < 2000, `refused in ${Math.round(performance.now() - started)} ms`)
})

t.test('element depth is limited', async (t) => {
  t.equal(KML_LIMITS.maxElementDepth, 256)
  const open = Array.from({ length: 300 }, (_, i) => `<x${i}>`).join('\n')
  const err = await expectKmlError(`<kml>\n<Document>\n<Placemark>\n<ExtendedData>\n${open}`)
  // kml, Document, Placemark, ExtendedData and 252 more: the 257th element is refused.
  t.equal(err.message, 'elements nested deeper than 256 levels at line 257 (<x252>)')
  t.equal(err.line, 257)
})

t.test('many sibling folders read in time linear in their number', async (t) => {
  const doc = (n: number) => {
    const parts = ['<kml><Document>']
    for (let i = 0; i < n; i++) parts.push(`<Folder><name>f${i}</name><Placemark><name>p${i}</name><Point><coordinates>1,1</coordinates></Point></Placemark></Folder>\n`)
    parts.push('</Document></kml>')
    return parts
  }
  const time = async (n: number) => {
    const started = performance.now()
    let folders = 0
    let marks = 0
    for await (const item of readKml(fromArray(doc(n)))) {
      if (item.kind === 'folder') folders++
      else if (item.kind === 'placemark') marks++
    }
    t.same([folders, marks], [n, n])
    return performance.now() - started
  }
  await time(5000)
  const small = await time(10_000)
  const large = await time(80_000)
  t.ok(large < 2000 + small * 8 * 3, `10,000 folders: ${Math.round(small)} ms, 80,000: ${Math.round(large)} ms`)
})

// A document whose one placemark's `element` text is fed in 64 KiB pieces up to `total` characters;
// `produced` tells how much had been handed to the reader when it gave up.
function endless (before: string, piece: string, total: number, after: string) {
  const state = { produced: 0 }
  async function * source (): AsyncGenerator<string> {
    yield before
    const chunk = piece.repeat(Math.ceil(65536 / piece.length))
    while (state.produced < total) {
      state.produced += chunk.length
      yield chunk
    }
    yield after
  }
  return { source: source(), state }
}

t.test('huge coordinates are refused while they arrive, not once held', async (t) => {
  t.equal(KML_LIMITS.maxCoordinatesChars, 16 * 1024 * 1024)
  const { source, state } = endless('<kml><Document>\n<Placemark><name>big</name><LineString>\n<coordinates>', '1.5,2.5 ', 64 * 1024 * 1024, '</coordinates></LineString></Placemark></Document></kml>')
  const err = await expectKmlError(source)
  t.equal(err.message, 'placemark at line 2: coordinates longer than 16777216 characters (16 MiB) (at line 3)')
  t.ok(state.produced < 16 * 1024 * 1024 + 256 * 1024, `stopped after ${state.produced} characters`)

  // The limit is for all of a placemark's coordinates: a polygon's rings together.
  const ring = '0,0 1,0 1,1 0,0 '.repeat(4)
  const rings = `<outerBoundaryIs><LinearRing><coordinates>${ring}</coordinates></LinearRing></outerBoundaryIs>` +
    `<innerBoundaryIs><LinearRing><coordinates>${ring}</coordinates></LinearRing></innerBoundaryIs>`.repeat(3)
  const polygon = await expectKmlError(kml(`<Placemark><name>p</name><Polygon>${rings}</Polygon></Placemark>`), { maxCoordinatesChars: ring.length * 3 })
  t.match(polygon.message, /^placemark at line 5: coordinates longer than 192 characters/)
  t.equal(placemarks(await collectWith(kml(`<Placemark><name>p</name><Polygon>${rings}</Polygon></Placemark>`), { maxCoordinatesChars: ring.length * 4 })).length, 1, 'at the limit: accepted')
})

async function collectWith (input: string, limits: Partial<KmlLimits> = {}): Promise<KmlItem[]> {
  const items: KmlItem[] = []
  for await (const item of readKml(fromArray([input]), { limits })) items.push(item)
  return items
}

t.test('too many positions in one geometry', async (t) => {
  t.equal(KML_LIMITS.maxPoints, 1_000_000)
  const line = (n: number) => kml(`<Placemark><name>l</name><LineString><coordinates>${'3,4 '.repeat(n)}</coordinates></LineString></Placemark>`)
  t.equal(placemarks(await collectWith(line(100), { maxPoints: 100 }))[0].geometry.coordinates.length, 100)
  const err = await expectKmlError(line(101), { maxPoints: 100 })
  t.equal(err.message, 'placemark at line 5: more than 100 coordinate positions')
  const ring = '0,0 1,0 1,1 0,0 '
  const poly = kml(`<Placemark><name>p</name><Polygon><outerBoundaryIs><LinearRing><coordinates>${ring}</coordinates></LinearRing></outerBoundaryIs>` +
    `<innerBoundaryIs><LinearRing><coordinates>${ring}</coordinates></LinearRing></innerBoundaryIs></Polygon></Placemark>`)
  t.equal(placemarks(await collectWith(poly, { maxPoints: 8 })).length, 1, 'rings count together: 8 of 8')
  t.match((await expectKmlError(poly, { maxPoints: 7 })).message, /more than 7 coordinate positions/)
})

t.test('huge text values are refused while they arrive', async (t) => {
  t.equal(KML_LIMITS.maxTextChars, 1024 * 1024)
  const description = endless('<kml><Document>\n<Placemark><name>d</name>\n<description>', 'blah ', 32 * 1024 * 1024, '</description></Placemark></Document></kml>')
  const err = await expectKmlError(description.source)
  t.equal(err.message, 'placemark at line 2: <description> text longer than 1048576 characters (1 MiB) (at line 3)')
  t.ok(description.state.produced < 1024 * 1024 + 256 * 1024, `stopped after ${description.state.produced} characters`)

  // Text split by CDATA sections and entities still adds up.
  const pieces = '<![CDATA[abcdefghij]]>&amp;'.repeat(20)
  t.match((await expectKmlError(kml(`<Placemark><name>${pieces}</name></Placemark>`), { maxTextChars: 100 })).message, /^placemark at line 5: <name> text longer than 100 characters/)

  const folder = await expectKmlError(kml(`<Folder>\n<name>${'x'.repeat(101)}</name></Folder>`), { maxTextChars: 100 })
  t.match(folder.message, /^folder at line 5: <name> text longer than 100 characters \(at line 6\)$/)
  const style = await expectKmlError(kml(`<Style id="s">\n<IconStyle><Icon><href>${'h'.repeat(101)}</href></Icon></IconStyle></Style>`), { maxTextChars: 100 })
  t.match(style.message, /^style "s" at line 5: <href> text longer than 100 characters/)
})

t.test('folder names, style ids and folder paths are bounded, the line named', async (t) => {
  t.same([KML_LIMITS.maxFolderNameChars, KML_LIMITS.maxStyleIdChars, KML_LIMITS.maxFolderPathChars], [800, 800, 2048])
  const point = '<Placemark><name>p</name><Point><coordinates>1,1</coordinates></Point></Placemark>'
  // A name of exactly the limit passes; one more character is refused while it arrives.
  t.equal(placemarks(await collectWith(kml(`<Folder><name>${'n'.repeat(800)}</name>${point}</Folder>`)))[0].folderPath[0].length, 800)
  t.equal((await expectKmlError(kml(`<Folder>\n<name>${'n'.repeat(801)}</name>${point}</Folder>`))).message,
    'folder at line 5: <name> text longer than 800 characters (at line 6)')
  const ok = await collectWith(kml(`<Style id="${'s'.repeat(800)}"><LineStyle><width>2</width></LineStyle></Style>`))
  t.equal(ok.filter((i) => i.kind === 'style').length, 1, 'a style id of 800 characters')
  t.equal((await expectKmlError(kml(`\n<StyleMap id="${'s'.repeat(801)}"></StyleMap>`))).message, '<StyleMap> at line 6: id longer than 800 characters')
  t.equal((await expectKmlError(kml(`<Style id="${'s'.repeat(801)}"/>`))).message, '<Style> at line 5: id longer than 800 characters')

  // A name of the limit split between two of the reader's 64 KiB writes to the parser is still within it.
  const before = `<kml><Document>${' '.repeat(65536 - 400 - '<kml><Document><Folder><name>'.length)}<Folder><name>`
  t.equal(before.length, 65536 - 400)
  t.equal(placemarks(await collectWith(`${before}${'n'.repeat(800)}</name>${point}</Folder></Document></kml>`))[0].folderPath[0].length, 800, 'split between two writes')

  // The path: the names of a folder and of those around it, together.
  const nested = (levels: number, nameChars: number) =>
    kml(Array.from({ length: levels }, (_, i) => `<Folder><name>${String(i).padStart(nameChars, 'f')}</name>`).join('\n') + point + '</Folder>'.repeat(levels))
  const atLimit = placemarks(await collectWith(nested(32, 64)))
  t.equal(atLimit[0].folderPath.join('').length, 2048, '32 folders of 64 characters: 2048, the limit')
  t.equal((await expectKmlError(nested(33, 64))).message,
    'folder at line 37: its folder path (its name and those of the 32 folders around it) is longer than 2048 characters (at line 37)')
  t.match((await expectKmlError(nested(10, 50), { maxFolderPathChars: 120 })).message, /^folder at line 7: its folder path \(its name and those of the 2 folders around it\) is longer than 120 characters/)
})

t.test('one placemark or style holds a bounded amount of text', async (t) => {
  const data = Array.from({ length: 20 }, (_, i) => `<Data name="k${i}"><value>${'v'.repeat(50)}</value></Data>`).join('')
  const mark = kml(`<Placemark><name>many</name><ExtendedData>${data}</ExtendedData><Point><coordinates>1,1</coordinates></Point></Placemark>`)
  t.equal(placemarks(await collectWith(mark, { maxPlacemarkChars: 10_000 }))[0].extendedData.length, 20)
  t.match((await expectKmlError(mark, { maxPlacemarkChars: 1000 })).message, /^placemark at line 5 holds more than 1000 characters of text/)
  // Empty entries are not free.
  const empty = Array.from({ length: 100 }, () => '<SimpleData name="e"/>').join('')
  t.match((await expectKmlError(kml(`<Placemark><ExtendedData><SchemaData>${empty}</SchemaData></ExtendedData></Placemark>`), { maxPlacemarkChars: 1000 })).message, /holds more than 1000 characters/)

  const props = Array.from({ length: 50 }, (_, i) => `<p${i}>${'x'.repeat(30)}</p${i}>`).join('')
  t.match((await expectKmlError(kml(`<Style id="big"><LabelStyle>${props}</LabelStyle></Style>`), { maxStyleChars: 1000 })).message, /^style "big" at line 5 holds more than 1000 characters of text/)
})

t.test('a run of text, comments or a tag past the token limit is refused', async (t) => {
  t.equal(KML_LIMITS.maxTokenChars, 16 * 1024 * 1024)
  const comment = endless('<kml><Document>\n<!--', 'comment ', 64 * 1024 * 1024, '--></Document></kml>')
  const err = await expectKmlError(comment.source)
  t.equal(err.message, 'text, comments or a tag running longer than 16777216 characters (16 MiB) without an element boundary (at line 2)')
  t.ok(comment.state.produced < 16 * 1024 * 1024 + 256 * 1024, `stopped after ${comment.state.produced} characters`)
  const tag = await expectKmlError(`<kml><Document><Placemark ${Array.from({ length: 200 }, (_, i) => `a${i}="1"`).join(' ')}/></Document></kml>`, { maxTokenChars: 1000 })
  t.match(tag.message, /^text, comments or a tag running longer than 1000 characters/)
  t.equal(placemarks(await collectWith(kml('<!-- a short comment --><Placemark><name>ok</name><Point><coordinates>1,1</coordinates></Point></Placemark>'), { maxTokenChars: 1000 })).length, 1)
})

async function decoded (bytes: Buffer, chunk = bytes.length): Promise<{ items: KmlItem[]; report: DecodeReport }> {
  const report: DecodeReport = { encoding: null, invalidSequences: 0, firstInvalidLine: null }
  const items: KmlItem[] = []
  for await (const item of readKml(fromArray(slices(bytes, chunk)), { report })) items.push(item)
  return { items, report }
}

const encoded = (encoding: string) => `<?xml version="1.0" encoding="${encoding}"?>
<kml><Document>
<Placemark><name>Café «Zoë» — 5 €</name><description>naïve</description><Point><coordinates>1,1</coordinates></Point></Placemark>
</Document></kml>
`

t.test('the declared encoding is honoured', async (t) => {
  const latin1 = Buffer.from(encoded('ISO-8859-1').replace(' — 5 €', ''), 'latin1')
  t.ok(latin1.includes(0xe9), 'é is one byte')
  for (const size of [latin1.length, 1]) {
    const { items, report } = await decoded(latin1, size)
    t.equal(placemarks(items)[0].name, 'Café «Zoë»', `ISO-8859-1 in chunks of ${size}`)
    t.same(report, { encoding: 'iso-8859-1', invalidSequences: 0, firstInvalidLine: null })
  }
  t.equal(placemarks((await decoded(Buffer.from(encoded('latin1').replace(' — 5 €', ''), 'latin1'))).items)[0].description, 'naïve', 'the label latin1')

  // windows-1252 puts € at 0x80 and — at 0x97.
  const cp1252 = Buffer.from(encoded('windows-1252').replace('—', '\u0097').replace('€', '\u0080'), 'latin1')
  const win = await decoded(cp1252, 5)
  t.equal(placemarks(win.items)[0].name, 'Café «Zoë» — 5 €')
  t.equal(win.report.encoding, 'windows-1252')

  const utf8 = Buffer.from(encoded('UTF-8'))
  t.equal(placemarks((await decoded(utf8, 1)).items)[0].name, 'Café «Zoë» — 5 €')
  t.equal(placemarks((await decoded(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(encoded('utf-8'))]), 2)).items)[0].name, 'Café «Zoë» — 5 €', 'UTF-8 with a BOM')
  const undeclared = await decoded(Buffer.from(encoded('UTF-8').replace(/^<\?xml[^>]*>\n/, '')), 3)
  t.equal(placemarks(undeclared.items)[0].name, 'Café «Zoë» — 5 €', 'no declaration: UTF-8')
  t.equal(undeclared.report.encoding, 'utf-8')
})

t.test('UTF-16 with a byte order mark, either byte order', async (t) => {
  const text = encoded('UTF-16').replace('Zoë', 'Zoë 🎡')
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')])
  const be = Buffer.from(le).swap16()
  t.same([be[0], be[1]], [0xfe, 0xff])
  for (const [name, bytes] of [['utf-16le', le], ['utf-16be', be]] as const) {
    for (const size of [bytes.length, 1, 3]) {
      const { items, report } = await decoded(bytes, size)
      t.equal(placemarks(items)[0]?.name, 'Café «Zoë 🎡» — 5 €', `${name} in chunks of ${size}`)
      t.same(report, { encoding: name, invalidSequences: 0, firstInvalidLine: null })
    }
  }
  const noBom = await decoded(Buffer.from(text, 'utf16le'), 7)
  t.equal(placemarks(noBom.items)[0].name, 'Café «Zoë 🎡» — 5 €', 'UTF-16LE told by its layout without a BOM')

  // A lone surrogate is counted like an invalid UTF-8 sequence.
  const broken = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text.replace('naïve', 'na\uD800ve'), 'utf16le')])
  const lone = await decoded(broken, 64)
  t.equal(placemarks(lone.items)[0].description, 'na\uFFFDve')
  t.same(lone.report, { encoding: 'utf-16le', invalidSequences: 1, firstInvalidLine: 3 })
})

t.test('an unsupported or impossible encoding is refused, naming it', async (t) => {
  const ebcdic = await expectKmlError([Buffer.from(encoded('EBCDIC-CP-US'))])
  t.equal(ebcdic.message, 'unsupported encoding "EBCDIC-CP-US" in the XML declaration (supported: UTF-8, UTF-16 with a byte order mark, ISO-8859-1, windows-1252 and the other WHATWG encodings)')
  t.match((await expectKmlError([Buffer.from(encoded('x-klingon'))])).message, /^unsupported encoding "x-klingon"/)
  t.match((await expectKmlError([Buffer.from(encoded('UTF-7'))])).message, /^unsupported encoding "UTF-7"/)
  t.match((await expectKmlError([Buffer.from(encoded('ISO-2022-KR'))])).message, /^unsupported encoding "ISO-2022-KR"/, 'a replacement-only encoding')
  t.match((await expectKmlError([Buffer.from(encoded('UTF-16'))])).message, /names encoding "UTF-16" but the file is not UTF-16 text/)
  t.match((await expectKmlError([Buffer.from([0xff, 0xfe, 0, 0, 0x3c, 0, 0, 0])])).message, /UTF-32 text is not supported/)
})

t.test('invalid UTF-8 is counted with the line of the first, not dropped or fatal', async (t) => {
  const text = encoded('UTF-8')
  const lines = text.split('\n')
  // Line 3: a stray continuation byte and a truncated 3-byte sequence; line 4: an overlong encoding.
  const bytes = Buffer.concat([
    Buffer.from(`${lines[0]}\n${lines[1]}\n<Placemark><name>bad `), Buffer.from([0x80]), Buffer.from(' and '), Buffer.from([0xe2, 0x82]),
    Buffer.from('</name><Point><coordinates>1,1</coordinates></Point></Placemark>\n<Placemark><name>'), Buffer.from([0xc0, 0xaf]),
    Buffer.from('</name><Point><coordinates>2,2</coordinates></Point></Placemark>\n'), Buffer.from(lines.slice(2).join('\n'))
  ])
  for (const size of [bytes.length, 1, 2, 5]) {
    const { items, report } = await decoded(bytes, size)
    t.same(placemarks(items).map((p) => p.name), ['bad \uFFFD and \uFFFD', '\uFFFD\uFFFD', 'Café «Zoë» — 5 €'], `chunks of ${size}`)
    t.same(report, { encoding: 'utf-8', invalidSequences: 4, firstInvalidLine: 3 })
  }
  // Input ending inside a sequence: counted, and here (outside the root) then refused by the parser.
  const report: DecodeReport = { encoding: null, invalidSequences: 0, firstInvalidLine: null }
  const truncated = fromArray(slices(Buffer.concat([Buffer.from('<kml></kml>\n'), Buffer.from([0xf0, 0x9f])]), 1))
  await t.rejects(async () => { for await (const item of readKml(truncated, { report })) void item }, /text data outside of root node/)
  t.same(report, { encoding: 'utf-8', invalidSequences: 1, firstInvalidLine: 2 }, 'input ending inside a sequence')
})

t.test('coordinates in every number form read as Number() reads them', async (t) => {
  const numbers = ['-115.17178861234567', '36.09365760000000001', '0.1234567890123456789012', '-0', '+12.5', '12.', '.5', '1e1', '-1.5E-3', '007.250', '179.99999999999999999']
  for (const lon of numbers) {
    const items = await collect(kml(`<Placemark><name>p</name><Point><coordinates>${lon},${numbers[1]},0</coordinates></Point></Placemark>`))
    const coordinates = placemarks(items)[0].geometry.coordinates as number[]
    t.ok(Object.is(coordinates[0], Number(lon)) && Object.is(coordinates[1], Number(numbers[1])), lon)
  }
  const line = (text: string) => kml(`<Placemark><name>l</name><LineString><coordinates>${text}</coordinates></LineString></Placemark>`)
  const read = async (text: string, limits: Partial<KmlLimits> = {}) => {
    const items = await collectWith(line(text), limits)
    return items[0].kind === 'placemark' ? items[0].placemark.geometry.coordinates : items[0].kind === 'skipped' ? items[0].reason : null
  }
  t.same(await read(`1,2${NBSP}3,4`), [[1, 2], [3, 4]], 'a no-break space splits tuples as whitespace')
  t.same(await read('1 , 2 3, 4'), [[1, 2], [3, 4]], 'spaces around commas are joined')
  t.same(await read('1,2 , 3 4,5'), [[1, 2], [4, 5]], 'a space before a comma joins the tuples around it')
  t.same(await read('1,2,0 , 3 4,5'), 'invalid coordinates', 'into four numbers')
  t.same(await read('1,2,0 , 3 4,5', { maxPoints: 1 }), 'invalid coordinates', 'even past maxPoints')
  t.same(await read('1,2,3,4 5,6'), 'invalid coordinates', 'four numbers')
  t.same(await read('1,2, 5,6'), 'invalid coordinates', 'an empty altitude after joining')
  t.same(await read('181,2 5,6'), 'invalid coordinates', 'longitude out of range')
  t.same(await read('1,2,1e999 5,6'), 'invalid coordinates', 'an infinite altitude')
  t.same(await read('\t1,2\r\n 5,6 '), [[1, 2], [5, 6]])
  t.equal((await expectKmlError(line('1,2 3,4 5,6'), { maxPoints: 2 })).message, 'placemark at line 5: more than 2 coordinate positions')
})

t.test('an element named like an object property is no geometry', async (t) => {
  const doc = '<kml xmlns="http://www.opengis.net/kml/2.2"><Document>' +
    '<Placemark><name>a</name><constructor/><toString/><Point><coordinates>1,2</coordinates></Point></Placemark>' +
    '<Placemark><name>b</name><__proto__/><hasOwnProperty/></Placemark></Document></kml>'
  const items = await collect(doc)
  t.same(placemarks(items).map((p) => [p.name, p.geometry.type]), [['a', 'Point']])
  t.same(items.flatMap((i) => (i.kind === 'skipped' ? [[i.reason, i.name]] : [])), [['no geometry', 'b']])
})
