import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildTestApp, openTestDatabase } from '../helper.ts'

const run = promisify(execFile)
const ogrinfo = await run('which', ['ogrinfo']).then(({ stdout }) => stdout.trim(), () => '')

t.test('GDAL\'s MVT driver reads a served tile', { skip: ogrinfo === '' ? 'ogrinfo (GDAL) is not installed: apt-get install gdal-bin' : false }, async (t) => {
  const handle = await openTestDatabase(t, { kind: 'pglite', sample: true })
  const app = await buildTestApp(t, handle)
  await app.boxIndex.idle()
  const res = await app.inject('/api/v1/tiles/14/2950/6428.mvt')
  t.equal(res.statusCode, 200)
  const dir = mkdtempSync(join(tmpdir(), 'tiles-gdal-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const gdal = { env: { ...process.env, CPL_DEBUG: 'OFF' } }

  // A lone file, its tile given as open options.
  const file = join(dir, 'tile.mvt')
  writeFileSync(file, res.rawPayload)
  const { stdout } = await run('ogrinfo', ['-ro', '-al', '-oo', 'Z=14', '-oo', 'X=2950', '-oo', 'Y=6428', file], gdal)
  t.match(stdout, /Layer name: placemarks/)
  const count = Number(/Feature Count: (\d+)/.exec(stdout)?.[1])
  t.ok(count > 0, `${count} features`)
  t.match(stdout, /name \(String\) = 10\/1\/2017/, 'the names')
  t.match(stdout, /geometry_type \(String\) = Point/)
  t.match(stdout, /folder \(String\) = Las Vegas Strip/)
  // Georeferenced: the points are in Las Vegas (GDAL gives Web Mercator metres).
  const x = Number(/POINT \((-?[\d.]+) /.exec(stdout)?.[1])
  const lon = (x / 20037508.342789244) * 180
  t.ok(lon > -115.3 && lon < -115.0, `a point at longitude ${lon.toFixed(4)}`)

  // The same as a {z}/{x}/{y}.pbf file of a tileset directory.
  mkdirSync(join(dir, '14', '2950'), { recursive: true })
  const pbf = join(dir, '14', '2950', '6428.pbf')
  writeFileSync(pbf, res.rawPayload)
  const { stdout: listed } = await run('ogrinfo', ['-ro', '-so', '-al', pbf], gdal)
  t.match(listed, /Layer name: placemarks/)
  t.match(listed, new RegExp(`Feature Count: ${count}\\b`), 'the same features')
})
