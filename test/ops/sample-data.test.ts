import t, { type Test } from 'tap'
import { once } from 'node:events'
import { Writable } from 'node:stream'
import { startServer } from '../support/run.ts'
import { buildApp, createPostgresDatabase, freePort, openTestDatabase, productionSettings, testConfig, testSecrets } from '../helper.ts'
import { loggerOptions } from '../../lib/logger.ts'
import { seedSample } from '../../db/sample/seed.ts'
import { demoActivity, seedDemoActivityIfEmpty } from '../../db/sample/activity.ts'
import type { DatabaseHandle } from '../../db/index.ts'

// Real servers, one of them creating an embedded database: a busy machine stretches that.
t.setTimeout(300_000)

const loadPlacemarks = 'load placemarks with `npm run import -- <file.kml|file.kmz>`'
const loadActivity = 'activity with `npm run import:activity -- <file.ndjson>` or `npm run seed:activity`'
const nothingSeeded = 'nothing seeded (SEED_SAMPLE_DATA=true seeds the sample data)'

interface LogEntry { level: number; msg: string; placemarks?: number; events?: number }

// The start-up log's lines about the data: what was seeded, or what is missing.
const dataLines = (lines: string[]): LogEntry[] => lines
  .map((line) => JSON.parse(line) as LogEntry)
  .filter((entry) => /seeded|no dataset|no activity/.test(entry.msg))

t.test('production on the embedded database seeds nothing unless asked, and says so in one line', async (t) => {
  const dir = t.testdir({})
  const env = (port: number, extra: Record<string, string> = {}) => ({
    ...productionSettings,
    ...testSecrets,
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
    SEED_SAMPLE_DATA: undefined,
    PGLITE_DIR: dir,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    ...extra
  })
  const stats = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/api/v1/stats`)).json()) as { total_placemarks: number }

  const port = await freePort()
  const first = await startServer(t, env(port), /serving on/)
  t.match(dataLines(first.lines), [{ level: 30, msg: `no dataset and no activity yet, and ${nothingSeeded}: ${loadPlacemarks} and ${loadActivity}` }], 'one info line: nothing seeded, and how to load the data')
  t.equal(dataLines(first.lines).length, 1)
  t.equal((await stats(port)).total_placemarks, 0, 'no sample placemarks')
  first.child.kill('SIGTERM')
  await once(first.child, 'exit')

  // Asked for, on the same (still empty) database.
  const port2 = await freePort()
  const second = await startServer(t, env(port2, { SEED_SAMPLE_DATA: 'true' }), /serving on/)
  const placemarks = (await stats(port2)).total_placemarks
  t.ok(placemarks > 0, `${placemarks} sample placemarks`)
  t.match(dataLines(second.lines), [{
    level: 30,
    msg: `seeded the embedded database with the sample dataset (${placemarks} placemarks) and demo guild activity (${demoActivity.events} events)`,
    placemarks,
    events: demoActivity.events
  }], 'one info line: what was seeded')
  t.equal(dataLines(second.lines).length, 1)
})

t.test('a fresh PostgreSQL database starts empty, and the start-up log says how to load it', async (t) => {
  const url = await createPostgresDatabase(t)
  const port = await freePort()
  // Outside production seeding is on by default, and still leaves PostgreSQL alone.
  const started = await startServer(t, {
    ...testSecrets,
    DATABASE_URL: url,
    SEED_SAMPLE_DATA: undefined,
    NODE_ENV: 'development',
    REDIS_URL: undefined,
    IDP_CLIENT_ID: undefined,
    PUBLIC_URL: undefined,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json'
  }, /serving on/)
  t.match(dataLines(started.lines), [{ level: 30, msg: `no dataset and no activity yet: ${loadPlacemarks} and ${loadActivity}` }])
  t.equal(dataLines(started.lines).length, 1)
  t.equal(((await (await fetch(`http://127.0.0.1:${port}/api/v1/stats`)).json()) as { total_placemarks: number }).total_placemarks, 0)
})

// The data lines an app logs while it starts on the handle.
async function startLog (t: Test, handle: DatabaseHandle, env: Record<string, string> = {}): Promise<LogEntry[]> {
  let output = ''
  const stream = new Writable({ write (chunk, _enc, done) { output += chunk; done() } })
  const app = await buildApp({ config: testConfig({}, env), db: handle, logger: { ...(loggerOptions('info', 'json') as object), stream } })
  await app.ready()
  await app.close()
  return dataLines(output.trim().split('\n'))
}

t.test('the start-up line names only what is missing, and nothing once both are there', async (t) => {
  const handle = await openTestDatabase(t)
  await seedSample(handle)
  t.same((await startLog(t, handle)).map((e) => e.msg), [`no activity yet: load ${loadActivity}`], 'a dataset, no activity')
  await seedDemoActivityIfEmpty(handle)
  t.same(await startLog(t, handle), [], 'both: nothing to say')

  const activityOnly = await openTestDatabase(t)
  await seedDemoActivityIfEmpty(activityOnly)
  t.same((await startLog(t, activityOnly)).map((e) => e.msg), [`no dataset yet: ${loadPlacemarks}`], 'activity, no dataset')
})

t.test('the embedded database seeds what is missing, and names what it seeded', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  await seedSample(handle)
  t.same((await startLog(t, handle)).map((e) => e.msg), [`no activity yet, and ${nothingSeeded}: load ${loadActivity}`], 'seeding off: nothing seeded')
  t.match(await startLog(t, handle, { SEED_SAMPLE_DATA: 'true' }), [{ msg: `seeded the embedded database with demo guild activity (${demoActivity.events} events)`, events: demoActivity.events }], 'seeding on: the activity only')
  t.same(await startLog(t, handle, { SEED_SAMPLE_DATA: 'true' }), [], 'nothing left to seed: nothing to say')
})
