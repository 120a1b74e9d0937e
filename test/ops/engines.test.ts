import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'
import { projectRoot } from '../helper.ts'

const json = (file: string) => JSON.parse(readFileSync(join(projectRoot, file), 'utf8'))
const pkg = json('package.json') as { engines: { node: string } }
const lock = json('package-lock.json') as { packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }> }

// The lowest version of each range `engines.node` allows (`^20.19.0 || >=22.12.0` → 20.19.0 and 22.12.0).
const lowestAllowed = new semver.Range(pkg.engines.node).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.version)

// Packages only a page runs, in the browser: the map serves MapLibre GL JS's files from its npm package,
// and its style parser brings this one, whose engines (Node 22) speak of a Node that never loads it.
const browserOnly: Record<string, string> = { '@mapbox/jsonlint-lines-primitives': 'maplibre-gl' }

t.test('engines.node is what every installed package asks for', async (t) => {
  t.ok(lowestAllowed.length > 0, `lowest versions allowed: ${lowestAllowed.join(', ')}`)
  for (const [path, entry] of Object.entries(lock.packages)) {
    const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node
    if (!path || !wanted || path.replace(/^.*node_modules\//, '') in browserOnly) continue
    for (const version of lowestAllowed) {
      if (!semver.satisfies(version, wanted)) t.fail(`${path.replace(/^.*node_modules\//, '')} needs Node ${wanted}; engines allows ${version}`)
    }
  }
  t.pass('every package accepts the lowest versions engines allows')
})

t.test('a package only the pages run is never loaded by the server', async (t) => {
  const sources = execFileSync('git', ['ls-files', '*.ts', '*.mjs'], { cwd: projectRoot, encoding: 'utf8' }).split('\n').filter((f) => f && !f.startsWith('public/'))
  for (const [name, page] of Object.entries(browserOnly)) {
    // Imported or required as code (the map's route only resolves the package's folder, to serve its files).
    const loads = new RegExp(`(from\\s+|import\\(|require\\()['"](${name}|${page})(['"]|/)`)
    const importers = sources.filter((f) => loads.test(readFileSync(join(projectRoot, f), 'utf8')))
    t.same(importers, [], `${name} (through ${page}) is imported by no server source`)
  }
})

t.test('the Node running the tests is one engines allows', async (t) => {
  t.ok(semver.satisfies(process.version, pkg.engines.node), `${process.version} satisfies ${pkg.engines.node}`)
})
