import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'
import { projectRoot } from '../helper.ts'

const json = (file: string) => JSON.parse(readFileSync(join(projectRoot, file), 'utf8'))
const pkg = json('package.json') as { engines: { node: string } }
const lock = json('package-lock.json') as { packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }> }

// The lowest version of each range `engines.node` allows (`^20.19.0 || >=22.12.0` → 20.19.0 and 22.12.0).
const lowestAllowed = new semver.Range(pkg.engines.node).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.version)

t.test('engines.node is what every installed package asks for', async (t) => {
  t.ok(lowestAllowed.length > 0, `lowest versions allowed: ${lowestAllowed.join(', ')}`)
  for (const [path, entry] of Object.entries(lock.packages)) {
    const wanted = Array.isArray(entry.engines) ? undefined : entry.engines?.node
    if (!path || !wanted) continue
    for (const version of lowestAllowed) {
      if (!semver.satisfies(version, wanted)) t.fail(`${path.replace(/^.*node_modules\//, '')} needs Node ${wanted}; engines allows ${version}`)
    }
  }
  t.pass('every package accepts the lowest versions engines allows')
})

t.test('the Node running the tests is one engines allows', async (t) => {
  t.ok(semver.satisfies(process.version, pkg.engines.node), `${process.version} satisfies ${pkg.engines.node}`)
})
