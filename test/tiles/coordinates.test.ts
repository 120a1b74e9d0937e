/**
 * Tile coordinates have one spelling: z, x and y in plain decimal digits, so that a tile has one URL
 * (one cache entry, one computation); every other spelling of a number is a 400, on every z/x/y route,
 * through the real server.
 */
import t from 'tap'
import type { AddressInfo } from 'node:net'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { TILE_NUMBER } from '../../routes/api/v1/tiles.ts'

const RULE = 'must be a whole number in plain decimal digits (no sign, leading zero, point, exponent or hex)'

// Spellings Ajv's coercion took for the number 1 (or 10), as the path carries them.
const aliases = ['0x1', '1e1', '1e0', '01', '00', '+1', '-0', '1.0', '1.', '.1e1', '%201', '1%20', '0b1', '0o1', '1_0', 'Infinity', '１']

t.test('z, x and y are plain decimal digits on every tile route; any other spelling is 400', async (t) => {
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, { RATE_LIMIT_MAX: 100_000 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`)
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() }
  }

  // Every documented route with tile coordinates in its path: each declares the one spelling.
  const doc = app.swagger() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema: { type?: string; pattern?: string } }[] }>> }
  const routes = Object.keys(doc.paths).filter((path) => /\{z\}.*\{x\}.*\{y\}/.test(path))
  t.same(routes, ['/api/v1/tiles/{z}/{x}/{y}.mvt'], 'the tile routes')
  for (const path of routes) {
    for (const name of ['z', 'x', 'y']) {
      const p = doc.paths[path]!.get!.parameters!.find((p) => p.in === 'path' && p.name === name)
      t.same(p?.schema && { type: p.schema.type, pattern: p.schema.pattern }, { type: 'string', pattern: TILE_NUMBER }, `${path} ${name}: the pattern in the document`)
    }
  }

  for (const template of routes) {
    const at = (z: string, x: string, y: string) => template.replace('{z}', z).replace('{x}', x).replace('{y}', y)
    t.equal((await get(at('1', '0', '0'))).status, 200, 'the canonical spelling answers')
    t.equal((await get(at('0', '0', '0'))).status, 200, 'zero is written 0')
    t.equal((await get(at('10', '0', '0'))).status, 204, 'an empty tile')
    const cached = app.datasetCache.size

    for (const [name, place] of [['z', 0], ['x', 1], ['y', 2]] as const) {
      for (const alias of aliases) {
        const coordinates = ['2', '1', '1']
        coordinates[place] = alias
        const res = await get(at(coordinates[0]!, coordinates[1]!, coordinates[2]!))
        t.equal(res.status, 400, `${name} = ${alias}: 400`)
        t.match(res.type, /^application\/json/)
        t.same(JSON.parse(res.body), { error: 'Bad Request', message: `params/${name} ${RULE}` }, `${name} = ${alias}: the rule, named`)
      }
    }
    t.equal(app.datasetCache.size, cached, 'no alias reached the cache or a computation')

    // The range is checked on the number the digits write.
    const ranges: [string, string][] = [
      [at('23', '0', '0'), 'params/z must be <= 22'],
      [at('99999999999999999999', '0', '0'), 'params/z must be <= 22'],
      [at('1', '2', '0'), 'params/x must be <= 1 at zoom 1'],
      [at('0', '0', '1'), 'params/y must be <= 0 at zoom 0'],
      [at('22', '4194304', '0'), 'params/x must be <= 4194303 at zoom 22']
    ]
    for (const [url, message] of ranges) {
      const res = await get(url)
      t.same([res.status, JSON.parse(res.body)], [400, { error: 'Bad Request', message }], url)
    }
    t.equal((await get(at('22', '4194303', '4194303'))).status, 204, 'the last tile of zoom 22')

    // The extension is part of the route: another one, or none, is not a tile URL.
    const tile = at('1', '0', '0')
    const stem = tile.slice(0, tile.lastIndexOf('.'))
    for (const path of [`${stem}.pbf`, `${stem}.MVT`, `${stem}.json`, stem]) {
      const res = await get(path)
      t.same([res.status, JSON.parse(res.body).error], [404, 'Not Found'], `${path}: no such route`)
    }
    const doubled = await get(`${tile}.mvt`)
    t.same([doubled.status, JSON.parse(doubled.body)], [400, { error: 'Bad Request', message: `params/y ${RULE}` }], 'y.mvt.mvt: y is not digits')
  }
})
