import t from 'tap'
import { readKml, type KmlItem } from '../../lib/kml/reader.ts'
import { escapeAttribute, escapeText, markupText, placemarkXml, styleXml, writeKml, type ExportFolder, type ExportPlacemark, type ExportStyle } from '../../lib/kml/writer.ts'

async function * batches<T> (items: T[], size = 2): AsyncGenerator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size)
}

const placemark = (id: number, folderPath: string[], extra: Partial<ExportPlacemark> = {}): ExportPlacemark => ({
  id,
  name: `p${id}`,
  description: null,
  styleId: null,
  folderPath,
  geometryType: 'Point',
  geometry: `{"type":"Point","coordinates":[${id},${id}]}`,
  coordinatesRaw: `${id},${id},0`,
  mediaLinks: [],
  extendedData: [],
  ...extra
})

async function write (placemarks: ExportPlacemark[], folders: ExportFolder[] = [], styles: ExportStyle[] = [], emptyFolders = true): Promise<string> {
  let out = ''
  for await (const chunk of writeKml({ styles: batches(styles), folders: batches(folders), placemarks: batches(placemarks), emptyFolders })) out += chunk
  return out
}

async function read (text: string): Promise<KmlItem[]> {
  const items: KmlItem[] = []
  for await (const item of readKml((async function * () { yield text })())) items.push(item)
  return items
}

t.test('text, attributes and markup are escaped so that XML reads them back as they were', async (t) => {
  t.equal(escapeText('a < b & c > d\r'), 'a &lt; b &amp; c &gt; d&#13;')
  t.equal(escapeAttribute('say "hi"\tnow\n'), 'say &quot;hi&quot;&#9;now&#10;')
  t.equal(escapeText('bell\u0007 and \uFFFE gone, \uD83D\uDE00 kept, lone \uD800 gone'), 'bell and  gone, \uD83D\uDE00 kept, lone  gone')
  t.equal(markupText('plain text'), 'plain text')
  t.equal(markupText('<b>x</b> ]]> y'), '<![CDATA[<b>x</b> ]]]]><![CDATA[> y]]>')
  t.equal(markupText('<b>x</b>\r'), '&lt;b&gt;x&lt;/b&gt;&#13;', 'a carriage return: escaped text, not CDATA')
})

t.test('times, a missing coordinates text and holes are written', async (t) => {
  t.match(placemarkXml(placemark(1, [], { timeBegin: '2017-10-01', timeEnd: '2017-10-01' })), '<TimeStamp><when>2017-10-01</when></TimeStamp>')
  t.match(placemarkXml(placemark(1, [], { timeBegin: '2017-10-01T22:00:00Z', timeEnd: null })), '<TimeSpan><begin>2017-10-01T22:00:00Z</begin></TimeSpan>')
  t.match(placemarkXml(placemark(1, [], { timeBegin: null, timeEnd: '2018' })), '<TimeSpan><end>2018</end></TimeSpan>')
  t.notMatch(placemarkXml(placemark(1, [])), /Time/)
  t.match(placemarkXml(placemark(1, [], { coordinatesRaw: null, geometry: '{"type":"Point","coordinates":[1.5,-2]}' })), '<Point><coordinates>1.5,-2</coordinates></Point>')
  t.match(placemarkXml(placemark(1, [], { coordinatesRaw: null, geometryType: 'LineString', geometry: '{"type":"LineString","coordinates":[[1,2],[3,4]]}' })), '<LineString><coordinates>1,2 3,4</coordinates></LineString>')
  const polygon = placemarkXml(placemark(1, [], {
    coordinatesRaw: null,
    geometryType: 'Polygon',
    geometry: '{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,0]],[[1,1],[2,1],[2,2],[1,1]]]}'
  }))
  t.match(polygon, '<outerBoundaryIs><LinearRing><coordinates>0,0 4,0 4,4 0,0</coordinates></LinearRing></outerBoundaryIs><innerBoundaryIs><LinearRing><coordinates>1,1 2,1 2,2 1,1</coordinates></LinearRing></innerBoundaryIs>')
})

t.test('styles: keys that are not element paths are left out; a repeated pair is kept', async (t) => {
  const style = styleXml({ id: 's"1', kind: 'Style', definition: { 'IconStyle.scale': '2', 'bad key': 'x', 'IconStyle.Icon.href': 'a&b' } })
  t.equal(style, '<Style id="s&quot;1"><IconStyle><scale>2</scale><Icon><href>a&amp;b</href></Icon></IconStyle></Style>\n')
  const map = styleXml({ id: 'm', kind: 'StyleMap', definition: { 'Pair.normal': '#a', 'Pair.normal[2]': '#b', 'Other.key': 'x' } })
  const items = await read(`<kml><Document>${map}</Document></kml>`)
  t.same(items, [{ kind: 'style', style: { id: 'm', kind: 'StyleMap', definition: { 'Pair.normal': '#a', 'Pair.normal[2]': '#b' } } }])
})

t.test('folders: nesting from the stored folders, or from the paths alone when the stored ones do not account for them', async (t) => {
  const folders: ExportFolder[] = [
    { id: 1, name: 'A', path: ['A'] },
    { id: 2, name: 'B', path: ['A', 'B'] },
    { id: 3, name: 'C', path: ['C'] }
  ]
  const text = await write([placemark(1, ['A', 'B']), placemark(2, ['A']), placemark(3, []), placemark(4, ['X', 'Y']), placemark(5, ['X'])], folders)
  const items = await read(text)
  const seen = items.map((i) => (i.kind === 'placemark' ? `${i.placemark.name}:${i.placemark.folderPath.join('/')}` : i.kind === 'folder' ? `folder ${i.folder.path.join('/')}` : i.kind))
  t.same(seen, ['folder A', 'folder A/B', 'p1:A/B', 'p2:A', 'p3:', 'folder C', 'folder X', 'folder X/Y', 'p4:X/Y', 'p5:X'])

  // Filtered: only the folders around the placemarks written.
  const filtered = await read(await write([placemark(2, ['A'])], folders, [], false))
  t.same(filtered.map((i) => (i.kind === 'folder' ? i.folder.path.join('/') : i.kind)), ['A', 'placemark'])
})

t.test('a large export comes in chunks of bounded size', async (t) => {
  const many = Array.from({ length: 3000 }, (_, i) => placemark(i + 1, [], { description: 'x'.repeat(200) }))
  const chunks: string[] = []
  for await (const chunk of writeKml({ styles: batches([]), folders: batches([]), placemarks: batches(many, 500), emptyFolders: true })) chunks.push(chunk)
  t.ok(chunks.length > 2, `${chunks.length} chunks`)
  t.ok(chunks.every((c) => c.length < 300 * 1024), 'each of about 256 KiB at most')
  t.equal((await read(chunks.join(''))).length, 3000)
})

t.test('a time is written as the element it came in, at its precision; without the written form, from the instants', async (t) => {
  const time = (extra: Partial<ExportPlacemark>) => /<Time(?:Stamp|Span)>.*<\/Time(?:Stamp|Span)>/.exec(placemarkXml(placemark(1, [], extra)))?.[0] ?? null
  t.equal(time({ time: { when: '1997' }, timeBegin: '1997-01-01T00:00:00.000Z', timeEnd: '1997-12-31T23:59:59.999Z' }), '<TimeStamp><when>1997</when></TimeStamp>')
  t.equal(time({ time: { begin: '2017-09', end: '2017-10-01' } }), '<TimeSpan><begin>2017-09</begin><end>2017-10-01</end></TimeSpan>')
  t.equal(time({ time: { end: '2017-10-01T12:00Z' } }), '<TimeSpan><end>2017-10-01T12:00Z</end></TimeSpan>')
  t.equal(time({ time: null, timeBegin: '2017-10-02T05:09:48.000Z', timeEnd: '2017-10-02T05:09:48.000Z' }), '<TimeStamp><when>2017-10-02T05:09:48.000Z</when></TimeStamp>')
  t.equal(time({ timeBegin: '1997-01-01T00:00:00.000Z', timeEnd: null }), '<TimeSpan><begin>1997-01-01T00:00:00.000Z</begin></TimeSpan>')
  t.equal(time({}), null)
  // Read back: the reader sees the same element and text.
  const [item] = await read(`<kml><Document>${placemarkXml(placemark(1, [], { time: { when: '2017-10' } }))}</Document></kml>`)
  t.same(item.kind === 'placemark' ? item.placemark.time : null, { when: '2017-10' })
})
