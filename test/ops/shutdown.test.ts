import t from 'tap'
import pg from 'pg'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import net from 'node:net'
import { Readable } from 'node:stream'
import { createPostgresDatabase, freePort, projectRoot, typescriptLoader } from '../helper.ts'
import { migrateToLatest, openDatabase } from '../../db/index.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it holds, `ms` have passed or `gaveUp` holds; answers whether `check` held. */
async function waitFor (check: () => Promise<boolean>, ms: number, gaveUp = () => false): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end && !gaveUp()) {
    if (await check()) return true
    await sleep(100)
  }
  return false
}

// Every step waits for a state it can observe, never for a fixed time, so a busy machine only makes it
// slower; any failure prints the server's own output.
t.test('SIGTERM lets in-flight requests finish, then exits 0', async (t) => {
  const url = await createPostgresDatabase(t)
  const seed = await openDatabase({ url })
  await migrateToLatest(seed.db)
  await importPlacemarks(seed, createReadStream(join(projectRoot, 'test/fixtures/small.kml')), { timeZone: 'UTC', source: 'small.kml' })
  await seed.close()

  // A port the kernel has just handed out and taken back: a random one could be a client socket's already.
  const port = await freePort()
  const server = spawn(process.execPath, ['--import', typescriptLoader, 'server.ts'], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', NODE_ENV: 'development', DB_STATEMENT_TIMEOUT_MS: '0', SHUTDOWN_GRACE_MS: '60000' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (server.exitCode === null) server.kill('SIGKILL') })
  let output = ''
  server.stdout!.on('data', (d) => { output += d })
  server.stderr!.on('data', (d) => { output += d })
  const exited = once(server, 'exit')
  // Extra diagnostics tap prints only when an assertion fails.
  const diag = () => ({ serverOutput: output.slice(-4000) })

  const base = `http://127.0.0.1:${port}`
  const up = await waitFor(async () => fetch(`${base}/health`).then((r) => r.ok, () => false), 90_000, () => server.exitCode !== null)
  t.ok(up, 'server started', diag())
  if (!up) return

  // Hold a lock so the requests below are still running when the signal arrives.
  const locker = new pg.Client({ connectionString: url })
  await locker.connect()
  t.teardown(() => locker.end().catch(() => {}))
  await locker.query('BEGIN')
  await locker.query('LOCK TABLE placemarks IN ACCESS EXCLUSIVE MODE')
  const inFlight = [1, 2, 3].map((id) => fetch(`${base}/api/v1/placemarks/${id}`).then(async (r) => [r.status, (await r.json()).id], (err: Error) => [err.message]))
  // The signal is sent once all three are waiting on the lock inside the database (seen from another
  // connection: the locker's transaction keeps one snapshot of the activity view).
  const observer = new pg.Client({ connectionString: url })
  await observer.connect()
  t.teardown(() => observer.end().catch(() => {}))
  const waiting = async () => {
    const { rows } = await observer.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = \'Lock\' AND query ~ \'placemarks\'')
    return rows[0]!.n >= 3
  }
  t.ok(await waitFor(waiting, 60_000), 'three requests are in flight', diag())
  server.kill('SIGTERM')
  const closing = await waitFor(async () => fetch(`${base}/health`).then((r) => r.status !== 200, () => true), 30_000)
  t.ok(closing, 'new requests are no longer served', diag())
  await locker.query('COMMIT')

  t.same(await Promise.all(inFlight), [[200, 1], [200, 2], [200, 3]], 'in-flight requests complete', diag())
  const [code] = await exited
  t.equal(code, 0, 'exit code 0', diag())
})

t.test('SIGTERM while a slow client reads a multi-MB answer: every byte arrives, then the process exits 0', async (t) => {
  const url = await createPostgresDatabase(t, { migrated: true })
  const seed = await openDatabase({ url })
  // 1,000 placemarks with 24 KB descriptions: a page of them is about 24 MB, more than the sockets' buffers hold.
  const description = 'd'.repeat(24_000)
  const kml = `<kml><Document>${Array.from({ length: 1000 }, (_, i) => `<Placemark><name>p${i}</name><description>${description}</description><Point><coordinates>${i / 100},1</coordinates></Point></Placemark>`).join('')}</Document></kml>`
  await importPlacemarks(seed, Readable.from([kml]), { timeZone: 'UTC', source: 'big.kml' })
  await seed.close()
  const port = await freePort()
  const server = spawn(process.execPath, ['--import', typescriptLoader, 'server.ts'], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', LOG_FORMAT: 'json', NODE_ENV: 'development', SHUTDOWN_GRACE_MS: '30000' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (server.exitCode === null) server.kill('SIGKILL') })
  let output = ''
  server.stdout!.on('data', (d) => { output += d })
  server.stderr!.on('data', (d) => { output += d })
  const exited = once(server, 'exit')
  const diag = () => ({ serverOutput: output.slice(-4000) })
  const up = await waitFor(async () => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false), 90_000, () => server.exitCode !== null)
  t.ok(up, 'server started', diag())
  if (!up) return

  // A client that asks for the page and then reads it slowly: 256 KB every 50 ms.
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('GET /api/v1/placemarks?limit=1000 HTTP/1.1\r\nHost: x\r\n\r\n')
  socket.pause()
  const chunks: Buffer[] = []
  let received = 0
  const reading = setInterval(() => {
    let chunk: Buffer | null
    let taken = 0
    while (taken < 262144 && (chunk = socket.read() as Buffer | null) !== null) { chunks.push(chunk); taken += chunk.length; received += chunk.length }
  }, 50)
  t.teardown(() => clearInterval(reading))
  // The signal once the answer is under way and far from read.
  t.ok(await waitFor(async () => received > 200_000, 30_000), 'the answer is being read', diag())
  server.kill('SIGTERM')
  const [code] = await exited
  // The process is gone: what it handed over is read to the end of the connection.
  clearInterval(reading)
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.resume()
  await once(socket, 'close')
  const text = Buffer.concat(chunks)
  const head = text.subarray(0, text.indexOf('\r\n\r\n')).toString()
  const length = Number(/content-length: (\d+)/i.exec(head)?.[1])
  const body = text.subarray(text.indexOf('\r\n\r\n') + 4)
  t.ok(length > 20_000_000, `a ${length}-byte answer`)
  t.equal(body.length, length, 'every byte of the answer arrived', diag())
  t.equal(code, 0, 'and then the process exited 0', diag())
})
