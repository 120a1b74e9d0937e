import t from 'tap'
import pg from 'pg'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { createPostgresDatabase, projectRoot } from '../helper.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'
import { importPlacemarks } from '../../lib/import/placemarks.ts'

t.test('SIGTERM lets in-flight requests finish, then exits 0', async (t) => {
  const url = await createPostgresDatabase(t)
  const seed = await openDatabase({ url })
  await migrateToLatest(seed.db)
  await importPlacemarks(seed, createReadStream(join(projectRoot, 'test/fixtures/small.kml')), { timeZone: 'UTC', source: 'small.kml' })
  await seed.close()

  const port = 30000 + Math.floor(Math.random() * 20000)
  const server = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'development', DB_STATEMENT_TIMEOUT_MS: '0' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  t.teardown(() => { if (server.exitCode === null) server.kill('SIGKILL') })
  let stderr = ''
  server.stderr!.on('data', (d) => { stderr += d })
  const base = `http://127.0.0.1:${port}`
  let up = false
  for (let i = 0; i < 100 && !up; i++) {
    up = await fetch(`${base}/health`).then((r) => r.ok, () => false)
    if (!up) await new Promise((r) => setTimeout(r, 200))
  }
  t.ok(up, 'server started')

  // Hold a lock so the requests below are still running when the signal arrives.
  const locker = new pg.Client({ connectionString: url })
  await locker.connect()
  await locker.query('BEGIN')
  await locker.query('LOCK TABLE placemarks IN ACCESS EXCLUSIVE MODE')
  const inFlight = [1, 2, 3].map((id) => fetch(`${base}/api/v1/placemarks/${id}`).then(async (r) => [r.status, (await r.json()).id]))
  await new Promise((r) => setTimeout(r, 300))
  server.kill('SIGTERM')
  await new Promise((r) => setTimeout(r, 300))
  const refused = await fetch(`${base}/health`).then((r) => r.status, () => 'refused')
  t.not(refused, 200, `new requests are no longer served (${refused})`)
  await locker.query('COMMIT')
  await locker.end()

  t.same(await Promise.all(inFlight), [[200, 1], [200, 2], [200, 3]], 'in-flight requests complete')
  const [code] = await once(server, 'exit')
  t.equal(code, 0, `exit code 0 ${stderr}`)
})
