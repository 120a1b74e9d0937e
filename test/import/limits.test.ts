import t, { type Test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { createPostgresDatabase, projectRoot } from '../helper.ts'
import { runScript, type Run } from '../support/run.ts'
import { deflateParts, makeZip } from '../support/zip.ts'
import { openKmlSource, KmlSourceError, KMZ_LIMITS } from '../../lib/kml/source.ts'
import { readKml } from '../../lib/kml/reader.ts'

const runImport = (args: string[], env: Record<string, string>) => runScript('scripts/import.ts', args, env)
const small = readFileSync(join(projectRoot, 'test/fixtures/small.kml'))
const MiB = 1024 * 1024

const oneLine = (t: Test, run: Run, pattern: RegExp) => {
  t.equal(run.code, 1, run.stderr)
  t.match(run.stderr.trim(), pattern)
  t.equal(run.stderr.trim().split('\n').length, 1, 'one line, no stack trace')
}

async function openError (path: string, options?: Parameters<typeof openKmlSource>[1]): Promise<KmlSourceError> {
  try {
    const source = await openKmlSource(path, options)
    try {
      for await (const item of readKml(source.chunks)) void item
    } finally {
      source.close()
    }
  } catch (err) {
    if (err instanceof KmlSourceError) return err
    throw err
  }
  throw new Error('expected a KmlSourceError')
}

// A KML document with `mib` MiB of blank space in the middle: it deflates about a thousand to one.
function blankKml (mib: number): (string | Buffer)[] {
  const blank = Buffer.alloc(MiB, ' ')
  return ['<kml><Document>', ...Array.from({ length: mib }, () => blank), '<Placemark><name>p</name><Point><coordinates>1,1</coordinates></Point></Placemark></Document></kml>']
}

t.test('KMZ limits: a zip bomb is refused before it is inflated', async (t) => {
  t.same(KMZ_LIMITS, { maxUncompressedBytes: 2 * 1024 * MiB, maxRatio: 100, ratioFreeBytes: 8 * MiB })
  const dir = t.testdir({})
  const bomb = await deflateParts(blankKml(64))
  t.ok(bomb.size / bomb.bytes.length > 500, `the entry deflates ${bomb.size} bytes to ${bomb.bytes.length}`)
  const bombPath = join(dir, 'bomb.kmz')
  writeFileSync(bombPath, makeZip([{ name: 'doc.kml', deflated: bomb }]))
  const started = performance.now()
  const refused = await openError(bombPath)
  t.match(refused.message, new RegExp(`^refusing KMZ .*bomb\\.kmz: doc\\.kml would inflate ${bomb.bytes.length} bytes to ${bomb.size} \\(\\d+:1, over the 100:1 limit for entries past 8 MiB\\); it looks like a zip bomb$`))
  t.ok(performance.now() - started < 1000, 'refused from the central directory, without inflating')

  // The same entry claiming 1000 bytes: refused as soon as the inflated bytes pass what it claimed.
  const liarPath = join(dir, 'liar.kmz')
  writeFileSync(liarPath, makeZip([{ name: 'doc.kml', deflated: bomb, declaredSize: 1000 }]))
  const liar = await openError(liarPath)
  t.match(liar.message, /^refusing KMZ .*liar\.kmz: doc\.kml inflates to more than its declared 1000 bytes; the archive is corrupt or a zip bomb$/)

  // A header declaring more than the absolute limit, even at a believable ratio.
  const hugePath = join(dir, 'huge.kmz')
  writeFileSync(hugePath, makeZip([{ name: 'doc.kml', deflated: bomb, declaredSize: 3 * 1024 * MiB, declaredCompressedSize: 64 * MiB }]))
  t.match((await openError(hugePath)).message, /^refusing KMZ .*huge\.kmz: doc\.kml would inflate to 3221225472 bytes, over the 2 GiB limit$/)

  // Small entries may compress any amount; a lower ratio passes past the free size.
  const modest = await deflateParts(blankKml(4))
  const modestPath = join(dir, 'modest.kmz')
  writeFileSync(modestPath, makeZip([{ name: 'doc.kml', deflated: modest }]))
  const source = await openKmlSource(modestPath)
  let names = 0
  for await (const item of readKml(source.chunks)) if (item.kind === 'placemark') names++
  source.close()
  t.equal(names, 1, '4 MiB of blanks at any ratio: under the free size')
  t.match((await openError(modestPath, { kmzLimits: { ratioFreeBytes: MiB } })).message, /over the 100:1 limit for entries past 1 MiB/)
  t.match((await openError(modestPath, { kmzLimits: { maxUncompressedBytes: 2 * MiB } })).message, /would inflate to \d+ bytes, over the 2 MiB limit/)
})

t.test('a KMZ with a sloppy end-of-central-directory record opens', async (t) => {
  const dir = t.testdir({})
  const zip = makeZip([{ name: 'doc.kml', data: small }])
  const cases: [string, Buffer][] = [
    ['junk after the record', Buffer.concat([zip, Buffer.from('trailing junk that no comment length covers\n')])],
    ['a comment length longer than the file', makeZip([{ name: 'doc.kml', data: small }], { commentLength: 40 })],
    ['a comment the length does not cover', makeZip([{ name: 'doc.kml', data: small }], { comment: 'made by a sloppy tool', commentLength: 5 })],
    ['a right comment', makeZip([{ name: 'doc.kml', data: small }], { comment: 'fine' })],
    ['a record signature inside the junk', Buffer.concat([zip, Buffer.from('PK\x05\x06 not a record')])]
  ]
  for (const [name, bytes] of cases) {
    const path = join(dir, `${name.replace(/\W+/g, '-')}.kmz`)
    writeFileSync(path, bytes)
    const source = await openKmlSource(path)
    let placemarks = 0
    for await (const item of readKml(source.chunks)) if (item.kind === 'placemark') placemarks++
    source.close()
    t.equal(placemarks, 7, name)
    t.equal(source.size, small.length, 'the entry size is known')
  }
  const cut = join(dir, 'cut.kmz')
  writeFileSync(cut, zip.subarray(0, zip.length - 10))
  t.match((await openError(cut)).message, /^cannot read KMZ .*cut\.kmz: end of central directory record signature not found$/)
})

t.test('the import CLI with files past the limits (PostgreSQL)', async (t) => {
  const url = await createPostgresDatabase(t)
  const env = { DATABASE_URL: url }
  const dir = t.testdir({})
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  const ok = await runImport(['test/fixtures/small.kml'], env)
  t.equal(ok.code, 0, ok.stderr)
  const version = async () => Number((await client.query('SELECT version FROM dataset')).rows[0].version)
  t.equal(await version(), 1)

  // Deep nesting: refused at once with the line.
  const nested = ['<kml>', '<Document>']
  for (let i = 0; i < 10_000; i++) nested.push(`<Folder><name>f${i}</name>`)
  nested.push(...Array.from({ length: 10_000 }, () => '</Folder>'), '</Document>', '</kml>')
  writeFileSync(join(dir, 'nested.kml'), nested.join('\n'))
  oneLine(t, await runImport([join(dir, 'nested.kml')], env), /^error: .*nested\.kml: Folder\/Document nesting deeper than 64 levels at line 66; nothing was imported$/)

  // Many sibling folders: imported, each with its placemark.
  const siblings = ['<kml><Document>']
  for (let i = 0; i < 30_000; i++) siblings.push(`<Folder><name>f${i}</name><Placemark><name>p${i}</name><Point><coordinates>1,1</coordinates></Point></Placemark></Folder>`)
  siblings.push('</Document></kml>')
  writeFileSync(join(dir, 'siblings.kml'), siblings.join('\n'))
  const started = performance.now()
  const wide = await runImport([join(dir, 'siblings.kml')], env)
  t.equal(wide.code, 0, wide.stderr)
  t.match(wide.stdout, /placemarks: 30000 /)
  t.match(wide.stdout, /folders: 30000\n/)
  t.same((await client.query('SELECT (SELECT count(*) FROM folders)::int AS f, (SELECT count(*) FROM placemarks)::int AS p')).rows[0], { f: 30000, p: 30000 })
  t.comment(`30,000 sibling folders imported in ${Math.round(performance.now() - started)} ms`)

  // A huge description: refused with the placemark's line.
  writeFileSync(join(dir, 'long.kml'), `<kml><Document>\n<Placemark><name>x</name>\n<description>${'d'.repeat(MiB + 1)}</description><Point><coordinates>1,1</coordinates></Point></Placemark></Document></kml>`)
  oneLine(t, await runImport([join(dir, 'long.kml')], env), /^error: .*long\.kml: placemark at line 2: <description> text longer than 1048576 characters \(1 MiB\) \(at line 3\); nothing was imported$/)

  // A zip bomb through the CLI.
  writeFileSync(join(dir, 'bomb.kmz'), makeZip([{ name: 'doc.kml', deflated: await deflateParts(blankKml(32)) }]))
  oneLine(t, await runImport([join(dir, 'bomb.kmz')], env), /^error: refusing KMZ .*bomb\.kmz: doc\.kml would inflate \d+ bytes to \d+ \(\d+:1, over the 100:1 limit for entries past 8 MiB\); it looks like a zip bomb$/)

  // An unsupported encoding.
  writeFileSync(join(dir, 'ebcdic.kml'), '<?xml version="1.0" encoding="EBCDIC-CP-US"?>\n<kml/>')
  oneLine(t, await runImport([join(dir, 'ebcdic.kml')], env), /^error: .*ebcdic\.kml: unsupported encoding "EBCDIC-CP-US" in the XML declaration .*; nothing was imported$/)
  t.equal(await version(), 2, 'only the sibling import went in')

  // A sloppy KMZ trailer imports.
  writeFileSync(join(dir, 'sloppy.kmz'), Buffer.concat([makeZip([{ name: 'doc.kml', data: small }], { commentLength: 12 }), Buffer.from('\r\n')]))
  const sloppy = await runImport([join(dir, 'sloppy.kmz')], env)
  t.equal(sloppy.code, 0, sloppy.stderr)
  t.match(sloppy.stdout, /placemarks: 7 \(Point 5, LineString 1, Polygon 1\)/)

  // Latin-1 and invalid UTF-8: read, and the invalid bytes reported in the summary.
  const latin1 = Buffer.from(small.toString('utf8').replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace('<name>Null Island', '<name>Île Nulle'), 'latin1')
  t.ok(latin1.includes(0xce), 'Î is one byte')
  writeFileSync(join(dir, 'latin1.kml'), latin1)
  const l1 = await runImport([join(dir, 'latin1.kml')], env)
  t.equal(l1.code, 0, l1.stderr)
  t.match(l1.stdout, /skipped: 1 MultiGeometry$/m, 'nothing invalid')
  t.equal((await client.query("SELECT count(*)::int AS n FROM placemarks WHERE name = 'Île Nulle'")).rows[0].n, 1, 'Î read as Î')

  const lines = small.toString('utf8').split('\n')
  const where = lines.findIndex((l) => l.includes('<name>Null Island'))
  const broken = Buffer.concat([Buffer.from(lines.slice(0, where + 1).join('\n')), Buffer.from([0xff, 0xfe]), Buffer.from('\n' + lines.slice(where + 1).join('\n'))])
  writeFileSync(join(dir, 'broken.kml'), broken)
  const bad = await runImport([join(dir, 'broken.kml')], env)
  t.equal(bad.code, 0, bad.stderr)
  t.match(bad.stdout, new RegExp(`skipped: 1 MultiGeometry, 2 invalid UTF-8 byte sequences, read as U\\+FFFD \\(first at line ${where + 1}\\)$`, 'm'))
})

// Characters of three UTF-8 bytes each, drawn at random (CJK ideographs): text that compresses poorly,
// as an index key meets it at its largest.
const cjk = (n: number) => Array.from({ length: n }, () => String.fromCodePoint(0x4e00 + Math.floor(Math.random() * 20_000))).join('')

t.test('folder names, style ids and folder paths: the dry run refuses what the import would, naming the line', async (t) => {
  const url = await createPostgresDatabase(t)
  const env = { DATABASE_URL: url }
  const dir = t.testdir({})
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  const point = '<Placemark><Point><coordinates>1,1</coordinates></Point></Placemark>'
  const refusedBoth = async (name: string, body: string, pattern: RegExp) => {
    writeFileSync(join(dir, name), body)
    for (const args of [['--dry-run'], []]) {
      const run = await runImport([join(dir, name), ...args], env)
      oneLine(t, run, pattern)
    }
  }

  // The file: 63 nested folders named with 2,600 characters each over 1,000 tiny points (264 KB)
  // made a 165 MB table; the first name is refused.
  const amplified = ['<kml><Document>']
  for (let i = 0; i < 63; i++) amplified.push(`<Folder><name>${String(i).padStart(2600, 'x')}</name>`)
  amplified.push(Array.from({ length: 1000 }, () => point).join('\n'), '</Folder>'.repeat(63), '</Document></kml>')
  await refusedBoth('amplified.kml', amplified.join('\n'), /^error: .*amplified\.kml: folder at line 2: <name> text longer than 800 characters \(at line 2\); nothing was imported$/)

  // Names within the limit whose path is not: 33 levels of 64 characters.
  const deep = ['<kml><Document>']
  for (let i = 0; i < 33; i++) deep.push(`<Folder><name>${String(i).padStart(64, 'f')}</name>`)
  deep.push(Array.from({ length: 1000 }, () => point).join('\n'), '</Folder>'.repeat(33), '</Document></kml>')
  await refusedBoth('deep.kml', deep.join('\n'),
    /^error: .*deep\.kml: folder at line 34: its folder path \(its name and those of the 32 folders around it\) is longer than 2048 characters \(at line 34\); nothing was imported$/)

  // A folder name and a style id past a btree index row (2,704 bytes) in incompressible text.
  await refusedBoth('folder-name.kml', `<kml><Document>\n<Folder>\n<name>${cjk(1000)}</name>${point}</Folder></Document></kml>`,
    /^error: .*folder-name\.kml: folder at line 2: <name> text longer than 800 characters \(at line 3\); nothing was imported$/)
  await refusedBoth('style-id.kml', `<kml><Document>\n<Style id="${cjk(1000)}"><LineStyle><width>2</width></LineStyle></Style>${point}</Document></kml>`,
    /^error: .*style-id\.kml: <Style> at line 2: id longer than 800 characters; nothing was imported$/)
  t.equal((await client.query('SELECT count(*)::int AS n FROM dataset')).rows[0].n, 0, 'nothing was imported')

  // At the limits, in the worst characters, PostgreSQL's indexes take them.
  const name = cjk(800)
  const id = cjk(800)
  const path = Array.from({ length: 32 }, (_, i) => String(i).padStart(64, 'f'))
  const fits = ['<kml><Document>', `<Style id="${id}"><LineStyle><width>2</width></LineStyle></Style>`, `<Folder><name>${name}</name>`,
    `<Placemark><styleUrl>#${id}</styleUrl><Point><coordinates>1,1</coordinates></Point></Placemark></Folder>`,
    ...path.map((n) => `<Folder><name>${n}</name>`), point, '</Folder>'.repeat(32), '</Document></kml>']
  writeFileSync(join(dir, 'fits.kml'), fits.join('\n'))
  const dry = await runImport([join(dir, 'fits.kml'), '--dry-run'], env)
  t.equal(dry.code, 0, dry.stderr)
  const run = await runImport([join(dir, 'fits.kml')], env)
  t.equal(run.code, 0, run.stderr)
  t.equal(Buffer.byteLength(name), 2400, 'a name of 800 characters of 3 bytes')
  t.same((await client.query('SELECT folder_path, style_id FROM placemarks ORDER BY id')).rows, [
    { folder_path: [name], style_id: id },
    { folder_path: path, style_id: null }
  ], 'stored and indexed')
  t.equal((await client.query('SELECT count(*)::int AS n FROM placemarks WHERE folder_path @> ARRAY[$1]::text[]', [name])).rows[0].n, 1, 'found through the folder index')
  t.equal((await client.query('SELECT id FROM styles')).rows[0].id, id)
})
