import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import yazl from 'yazl'
import yauzl from 'yauzl'
import { buildTestApp, dbKinds, fieldNotesKmz, importFieldNotes, openTestDatabase } from '../helper.ts'
import { isIconPath, openKmlSource } from '../../lib/kml/source.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'

const run = promisify(execFile)
const gdal = spawnSync('ogrinfo', ['--version']).status === 0
const dir = mkdtempSync(join(tmpdir(), 'icons-test-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
const KML = '<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><Style id="s"><IconStyle><Icon><href>images/a.png</href></Icon></IconStyle></Style><Placemark><name>p</name><styleUrl>#s</styleUrl><Point><coordinates>1,2</coordinates></Point></Placemark></Document></kml>'

async function kmz (name: string, entries: [string, Buffer][]): Promise<string> {
  const zip = new yazl.ZipFile()
  zip.addBuffer(Buffer.from(KML), 'doc.kml')
  for (const [path, data] of entries) zip.addBuffer(data, path)
  zip.end()
  const parts: Buffer[] = []
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) parts.push(chunk)
  const file = join(dir, name)
  writeFileSync(file, Buffer.concat(parts))
  return file
}

/** The entries of a zip held in memory, by name. */
async function unzip (data: Buffer): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.fromBuffer(data, { lazyEntries: true }, (err, z) => (err ? reject(err) : resolve(z))))
  const out = new Map<string, Buffer>()
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err)
        const parts: Buffer[] = []
        stream.on('data', (c: Buffer) => parts.push(c)).on('end', () => { out.set(entry.fileName, Buffer.concat(parts)); zip.readEntry() })
      })
    })
    zip.on('end', resolve).on('error', reject)
    zip.readEntry()
  })
  return out
}

t.test('a KMZ\'s images are read within their limits; the others are left out with the reason', async (t) => {
  const source = await openKmlSource(fieldNotesKmz)
  source.close()
  t.same(source.icons.map((i) => [i.name, i.type]), [1, 2, 3, 4].map((n) => [`images/icon-${n}.png`, 'image/png']))
  t.same(source.skippedIcons, [])

  const file = await kmz('mixed.kmz', [
    ['images/a.png', PNG], ['images/fake.png', Buffer.from('<html><script>alert(1)</script></html>')], ['images/big.gif', Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(5000)])],
    ['photo.JPG', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2])], ['notes.txt', Buffer.from('not an image')], ['images/c.png', PNG], ['images/d.png', PNG]
  ])
  const mixed = await openKmlSource(file, { iconLimits: { maxBytes: 1000, maxCount: 3 } })
  t.teardown(() => mixed.close())
  t.same(mixed.icons.map((i) => [i.name, i.type]), [['images/a.png', 'image/png'], ['photo.JPG', 'image/jpeg'], ['images/c.png', 'image/png']])
  t.same(mixed.skippedIcons, [
    { name: 'images/fake.png', reason: 'not a image/png image' },
    { name: 'images/big.gif', reason: 'over 1000 bytes' },
    { name: 'images/d.png', reason: 'more than 3 images' }
  ])
  const summary = await importPlacemarks(null, mixed.chunks, { timeZone: 'UTC', source: 'mixed.kmz', icons: mixed.icons, skippedIcons: mixed.skippedIcons })
  t.equal(summary.icons, 3)
  t.same(summary.skipped, { 'KMZ image left out (not a image/png image)': 1, 'KMZ image left out (over 1000 bytes)': 1, 'KMZ image left out (more than 3 images)': 1 })

  for (const ok of ['images/icon-1.png', 'a.png', 'deep/er/x.gif']) t.ok(isIconPath(ok), ok)
  for (const bad of ['', '/etc/passwd', '../x.png', 'images/../../x.png', 'images/./x.png', 'a//b.png', 'a\\b.png', 'a\u0000.png', 'x'.repeat(256)]) t.notOk(isIconPath(bad), JSON.stringify(bad))
})

for (const kind of dbKinds) {
  t.test(`icons kept with the dataset on ${kind}, served per dataset version, and written back into export.kmz`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    await importFieldNotes(handle)
    const app = await buildTestApp(t, handle)
    const source = await openKmlSource(fieldNotesKmz)
    source.close()
    const original = new Map(source.icons.map((i) => [i.name, i.data]))

    const list = await app.inject('/api/v1/icons')
    t.same(list.json(), { icons: [...original].map(([name, data]) => ({ name, contentType: 'image/png', bytes: data.length })), count: 4 }, 'the list: every image, by path')
    const res = await app.inject('/api/v1/icons/images/icon-2.png')
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'image/png')
    t.same(res.rawPayload, original.get('images/icon-2.png'), 'the bytes of the archive')
    const etag = String(res.headers.etag)
    t.match(etag, /^"\d+-/, 'tagged with the dataset version')
    t.equal((await app.inject({ url: '/api/v1/icons/images/icon-2.png', headers: { 'if-none-match': etag } })).statusCode, 304)

    const missing = await app.inject('/api/v1/icons/images/icon-99.png')
    t.equal(missing.statusCode, 404)
    t.same(missing.json(), { error: 'Not Found', message: 'Icon images/icon-99.png not found' })
    for (const url of ['/api/v1/icons/images/..%2F..%2Fpackage.json', '/api/v1/icons/..%2Fdoc.kml', '/api/v1/icons/images%5Cicon-1.png']) {
      const bad = await app.inject(url)
      t.equal(bad.statusCode, 400, url)
      t.equal(bad.json().error, 'Bad Request', url)
    }

    const kmzAnswer = await app.inject('/api/v1/export.kmz')
    t.equal(kmzAnswer.statusCode, 200)
    const entries = await unzip(kmzAnswer.rawPayload)
    t.same([...entries.keys()], ['doc.kml', 'images/icon-1.png', 'images/icon-2.png', 'images/icon-3.png', 'images/icon-4.png'], 'doc.kml first, then the images')
    for (const [name, data] of original) t.same(entries.get(name), data, `${name}: the same bytes`)
    t.match(entries.get('doc.kml')!.toString(), '<href>images/icon-1.png</href>', 'at the paths the styles point to')

    // The export imports again with its images.
    const file = join(dir, `export-${kind}.kmz`)
    writeFileSync(file, kmzAnswer.rawPayload)
    if (kind === 'postgres' && gdal) {
      // GDAL's KML driver (LIBKML skipped where it is built in) reads every placemark of the export, one layer per folder.
      const { stdout } = await run('ogrinfo', ['-ro', '-al', '-so', `/vsizip/${file}/doc.kml`], { env: { ...process.env, GDAL_SKIP: 'LIBKML' } })
      t.equal([...stdout.matchAll(/^Feature Count: (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0), 250, 'GDAL reads the 250 placemarks of the KMZ export')
    }
    const again = await openKmlSource(file)
    again.close()
    t.same(again.icons.map((i) => i.name), [...original.keys()])

    // A KML import replaces the dataset: its images go with the old version.
    await importPlacemarks(handle, Readable.from([Buffer.from(KML)]), { timeZone: 'UTC', source: 'plain.kml' })
    await app.datasetVersion.refresh()
    t.equal((await app.inject('/api/v1/icons/images/icon-2.png')).statusCode, 404, 'gone with the dataset that had it')
    t.same((await app.inject('/api/v1/icons')).json(), { icons: [], count: 0 }, 'a KML\'s dataset lists none')
  })
}
