/**
 * Builds `examples/field-notes.kmz`, the project's own KMZ: what the README imports, and the data the GIS
 * client tests (test/gis, test/tiles) read. It covers what the Vegas export has, at a size that pages:
 *
 * - 250 placemarks in folders (230 points, 12 lines, 8 polygons), shared Styles and StyleMaps whose icons
 *   are images inside the archive (`images/icon-1.png` … `images/icon-4.png`, as Google My Maps writes them);
 * - names with local dates and times, `10/1/2017 10:02:44 PM - …`, some with no AM/PM beside them
 *   (`10/1/2017  10:02:52 - …`, read as the PM of their neighbours) and one day with only 24-hour times;
 * - a KML time on most points (`<TimeStamp>` at every precision, `<TimeSpan>`s, one open), extended data
 *   and media links.
 *
 * Deterministic: the same bytes each run. `node --import ./scripts/typescript.mjs examples/build-field-notes.ts`
 */
import { createWriteStream } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { deflateSync } from 'node:zlib'
import yazl from 'yazl'

const OUT = fileURLToPath(new URL('./field-notes.kmz', import.meta.url))
const STAMP = new Date('2017-10-08T00:00:00Z')

// ---- Icons: 32×32 RGBA circles, one colour each --------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (bytes: Buffer) => {
  let c = 0xffffffff
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
function chunk (type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}
function circlePng ([r, g, b]: [number, number, number]): Buffer {
  const size = 32
  const rows: Buffer[] = []
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4)
    for (let x = 0; x < size; x++) {
      const d = Math.hypot(x + 0.5 - size / 2, y + 0.5 - size / 2)
      const inside = d <= 13
      const rim = d > 11
      row.set(inside ? (rim ? [255, 255, 255, 255] : [r, g, b, 255]) : [0, 0, 0, 0], 1 + x * 4)
    }
    rows.push(row)
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header.set([8, 6, 0, 0, 0], 8)
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.concat(rows), { level: 9 })), chunk('IEND', Buffer.alloc(0))])
}
const ICONS: [number, number, number][] = [[219, 68, 55], [15, 157, 88], [66, 133, 244], [244, 180, 0]]

// ---- The document --------------------------------------------------------------------------------

// A small deterministic generator (mulberry32), so that positions look scattered but never change.
function random (seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const next = random(20171001)
const around = (lon: number, lat: number, spread: number) => `${(lon + (next() - 0.5) * spread).toFixed(6)},${(lat + (next() - 0.5) * spread).toFixed(6)},0`

const styles = ICONS.map((_, i) => `  <Style id="icon-${i + 1}-normal"><IconStyle><scale>1</scale><Icon><href>images/icon-${i + 1}.png</href></Icon></IconStyle><LabelStyle><scale>0</scale></LabelStyle></Style>
  <Style id="icon-${i + 1}-highlight"><IconStyle><scale>1.2</scale><Icon><href>images/icon-${i + 1}.png</href></Icon></IconStyle><LabelStyle><scale>1</scale></LabelStyle></Style>
  <StyleMap id="icon-${i + 1}"><Pair><key>normal</key><styleUrl>#icon-${i + 1}-normal</styleUrl></Pair><Pair><key>highlight</key><styleUrl>#icon-${i + 1}-highlight</styleUrl></Pair></StyleMap>
`).join('') + `  <Style id="route"><LineStyle><color>ff2f6fd2</color><width>4</width></LineStyle></Style>
  <Style id="zone"><LineStyle><color>ff0000c0</color><width>2</width></LineStyle><PolyStyle><color>4d0000ff</color><fill>1</fill><outline>1</outline></PolyStyle></Style>
`

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
interface Mark { name: string; style: string; geometry: string; time?: string; description?: string; data?: [string, string][] }
const placemark = (m: Mark) => `    <Placemark><name>${xml(m.name)}</name>${m.description ? `<description><![CDATA[${m.description}]]></description>` : ''}${m.time ?? ''}<styleUrl>#${m.style}</styleUrl>${
  m.data ? `<ExtendedData>${m.data.map(([k, v]) => `<Data name="${k}"><value>${xml(v)}</value></Data>`).join('')}</ExtendedData>` : ''}${m.geometry}</Placemark>\n`
const point = (c: string) => `<Point><coordinates>${c}</coordinates></Point>`
const stamp = (when: string) => `<TimeStamp><when>${when}</when></TimeStamp>`

// The night's events, as a witness map writes them: most with PM, a few without (the same evening).
const night: [string, string][] = [
  ['10/1/2017 9:40:00 PM', 'Concert set begins'],
  ['10/1/2017 10:02:44 PM', 'Last song starts'],
  ['10/1/2017  10:02:52', '1st Shots'],
  ['10/1/2017 10:03:05 PM', 'Crowd runs north'],
  ['10/1/2017  10:04:12', 'Second volley'],
  ['10/1/2017 10:05:20 PM', 'Officers arrive at the gate'],
  ['10/1/2017  10:07:40', 'Traffic stopped on the boulevard'],
  ['10/1/2017 10:09:48 PM', 'Ambulances stage on Tropicana'],
  ['10/1/2017  10:12:33', 'Shelter in the hotel lobby'],
  ['10/1/2017 10:15:00 PM', 'Roads closed'],
  ['10/1/2017  10:31:05', 'Reports from the airport'],
  ['10/1/2017 11:20 PM', 'Hotel floor searched'],
  ['10/2/2017 6:30:00 AM', 'Morning briefing'],
  ['10/2/2017  7:15', 'Blood drive opens'],
  ['10/2/2017 8:00 AM', 'Streets reopen'],
  ['10/3/2017 9:00', 'Vigil planned (24-hour clock, no AM/PM that day)'],
  ['10/3/2017 19:30', 'Vigil on the Strip']
]

const folders: { name: string; marks: Mark[] }[] = [
  { name: 'Timeline', marks: night.map(([when, title], i) => ({ name: `${when} - ${title}`, style: `icon-${1 + (i % 2)}`, geometry: point(around(-115.1720, 36.0950, 0.01)), data: [['source', i % 3 === 0 ? 'witness' : 'scanner']] })) },
  { name: 'Las Vegas Strip', marks: [] },
  { name: 'Downtown', marks: [] },
  { name: 'Routes', marks: [] },
  { name: 'Zones', marks: [] }
]
const whens = ['2017', '2017-10', '2017-10-01', '2017-10-01T22:05:00-07:00', '2017-10-02T05:30:00Z', '2017-10-01T21:00:00']
for (let i = 0; folders[1].marks.length + folders[2].marks.length < 213; i++) {
  const strip = i % 3 !== 2
  const k = i % 10
  folders[strip ? 1 : 2].marks.push({
    name: `${strip ? 'Strip' : 'Downtown'} note ${i + 1}`,
    style: `icon-${1 + (i % 4)}`,
    geometry: point(strip ? around(-115.1710, 36.1100, 0.05) : around(-115.1420, 36.1700, 0.02)),
    time: k < 6 ? stamp(whens[k]) : k === 6 ? '<TimeSpan><begin>2017-10-01T20:00:00-07:00</begin><end>2017-10-02T02:00:00-07:00</end></TimeSpan>' : k === 7 ? '<TimeSpan><begin>2017-10-03</begin></TimeSpan>' : undefined,
    description: i % 5 === 0 ? `<b>Note ${i + 1}</b> from the walk` : undefined,
    data: i % 7 === 0 ? [['gx_media_links', `https://example.org/media/note-${i + 1}.jpg`], ['kind', 'photo']] : undefined
  })
}
for (let i = 0; i < 12; i++) {
  const coords = Array.from({ length: 4 }, () => around(-115.16, 36.13, 0.08)).join(' ')
  folders[3].marks.push({ name: `Route ${i + 1}`, style: 'route', geometry: `<LineString><tessellate>1</tessellate><coordinates>${coords}</coordinates></LineString>`, time: i % 2 ? stamp('2017-10-01') : undefined })
}
for (let i = 0; i < 8; i++) {
  const lon = -115.20 + i * 0.01
  const lat = 36.08 + (i % 4) * 0.02
  const ring = [[lon, lat], [lon + 0.006, lat], [lon + 0.006, lat + 0.005], [lon, lat + 0.005], [lon, lat]].map(([x, y]) => `${x.toFixed(4)},${y.toFixed(4)},0`).join(' ')
  folders[4].marks.push({ name: `Zone ${String.fromCharCode(65 + i)}`, style: 'zone', geometry: `<Polygon><outerBoundaryIs><LinearRing><coordinates>${ring}</coordinates></LinearRing></outerBoundaryIs></Polygon>` })
}

const doc = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2">
<Document>
  <name>Field notes</name>
  <description>The project's own example KMZ: notes, routes and zones around Las Vegas, names in local time (America/Los_Angeles).</description>
${styles}${folders.map((f) => `  <Folder>\n    <name>${f.name}</name>\n${f.marks.map(placemark).join('')}  </Folder>\n`).join('')}</Document>
</kml>
`

const zip = new yazl.ZipFile()
zip.addBuffer(Buffer.from(doc), 'doc.kml', { mtime: STAMP })
ICONS.forEach((colour, i) => zip.addBuffer(circlePng(colour), `images/icon-${i + 1}.png`, { mtime: STAMP, compress: false }))
zip.end()
zip.outputStream.pipe(createWriteStream(OUT)).on('close', () => console.log(`wrote ${OUT}`))
