import t, { type Test } from 'tap'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import pg from 'pg'
import net from 'node:net'
import { sql } from '../../db/kysely.ts'
import { adminUrl, createPostgresDatabase, dbKinds, openTestDatabase, projectRoot, type DbKind } from '../helper.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/index.ts'
import { CHANGES_CHANNEL, parseChange } from '../../db/changes.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'

const sample = join(projectRoot, 'db/sample/sample.kml')
const small = join(projectRoot, 'test/fixtures/small.kml')
const malformed = '<kml><Document>\n<Placemark><name>x</name><Point><coordinates>1,1</coordinates></Point></Placemark>\n<Placemark></Document></kml>'

const importFile = (handle: DatabaseHandle, file: string, dryRun = false) =>
  importPlacemarks(handle, createReadStream(file), { timeZone: 'UTC', source: file, dryRun })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitFor (check: () => boolean | Promise<boolean>, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

const readVersion = async (handle: DatabaseHandle) =>
  (await sql<{ version: number }>`SELECT coalesce(max(version), 0)::int AS version FROM dataset`.execute(handle.db)).rows[0].version

// One database per kind for the whole file (opening PGlite takes seconds); each test counts versions from where it starts.
const shared = new Map<DbKind, Promise<DatabaseHandle>>()
const sharedDatabase = (kind: DbKind) => {
  if (!shared.has(kind)) shared.set(kind, openTestDatabase(t, kind))
  return shared.get(kind) as Promise<DatabaseHandle>
}

// A listener of the dataset's changes on the bus, which the test stops when it ends, so that the next
// test on the shared database starts with none; it is given each new version, as text ('' when the
// listening connection was re-established and notifications may have been lost).
async function subscribe (t: Test, handle: DatabaseHandle, onVersion: (version: string) => void, onError?: (err: unknown) => void) {
  const stop = await handle.listen(CHANGES_CHANNEL, (payload) => {
    if (payload === '') return onVersion('')
    const change = parseChange(payload)
    if (change?.kind === 'dataset') onVersion(change.key)
  }, onError)
  t.teardown(stop)
  return stop
}

// PostgreSQL backends of the handle's database that are listening (their last statement a LISTEN).
const listeningBackends = async (handle: DatabaseHandle) =>
  (await handle.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`)).rows.map((r) => r.pid)

for (const kind of dbKinds) {
  t.test(`${kind}: an import announces its version on the change bus once it has committed`, async (t) => {
    const handle = await sharedDatabase(kind)
    const base = await readVersion(handle)
    const payloads: string[] = []
    const seen: number[] = []
    // What a server does on a notification: read the version again, which must already be the new one.
    await subscribe(t, handle, (payload) => {
      payloads.push(payload)
      readVersion(handle).then((v) => seen.push(v), t.error)
    })
    const versions: number[] = []
    await subscribe(t, handle, (version) => versions.push(Number(version)))

    const first = await importFile(handle, sample)
    t.equal(first.version, base + 1)
    await waitFor(() => seen.length === 1 && versions.length === 1, 'the first notification, on both listeners')
    t.same(payloads, [String(base + 1)])
    t.same(seen, [base + 1], 'the new version is visible when the notification arrives')

    await importFile(handle, small)
    await waitFor(() => seen.length === 2 && versions.length === 2, 'the second notification, on both listeners')
    t.same(payloads, [String(base + 1), String(base + 2)])
    t.same(seen, [base + 1, base + 2])
    t.same(versions, [base + 1, base + 2], 'a second listener has them too')
  })

  t.test(`${kind}: a failed import, a rolled-back notify and a dry run announce nothing`, async (t) => {
    const handle = await sharedDatabase(kind)
    const base = await readVersion(handle)
    const payloads: string[] = []
    await subscribe(t, handle, (payload) => payloads.push(payload))

    await t.rejects(importPlacemarks(handle, Readable.from([malformed]), { timeZone: 'UTC', source: 'bad.kml' }), /malformed XML/)
    const dry = await importFile(handle, small, true)
    t.equal(dry.version, null)
    const client = await handle.pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('SELECT emit_change($1, $2)', ['dataset', 'rolled back'])
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }

    // Notifications arrive in commit order, so anything sent above would come before this one.
    await importFile(handle, small)
    await waitFor(() => payloads.length > 0, 'the notification of the good import')
    await sleep(50)
    t.same(payloads, [String(base + 1)], 'only the committed import was announced')
  })

  t.test(`${kind}: unsubscribing stops delivery to that listener only`, async (t) => {
    const handle = await sharedDatabase(kind)
    const base = await readVersion(handle)
    const a: string[] = []
    const b: string[] = []
    const stopA = await subscribe(t, handle, (payload) => a.push(payload))
    const stopB = await subscribe(t, handle, (payload) => b.push(payload))

    await importFile(handle, small)
    await waitFor(() => a.length === 1 && b.length === 1, 'both listeners')
    await stopA()
    await stopA()
    await importFile(handle, small)
    await waitFor(() => b.length === 2, 'the remaining listener')
    await sleep(50)
    t.same(a, [String(base + 1)], 'nothing after unsubscribing')
    t.same(b, [String(base + 1), String(base + 2)])

    await stopB()
    if (kind === 'pglite') {
      const { rows } = await sql<{ channel: string }>`SELECT pg_listening_channels() AS channel`.execute(handle.db)
      t.same(rows, [], 'the backend no longer listens once the last listener is gone')
    } else {
      await waitFor(async () => (await listeningBackends(handle)).length === 0, 'the listening connections to close')
      t.pass('the listening connections are closed')
    }
  })
}

t.test('postgres: a listening connection that is killed comes back and keeps delivering', async (t) => {
  const handle = await sharedDatabase('postgres')
  const base = await readVersion(handle)
  const payloads: string[] = []
  const errors: unknown[] = []
  await subscribe(t, handle, (payload) => payloads.push(payload), (err) => errors.push(err))

  const [pid] = await listeningBackends(handle)
  t.ok(pid, 'the listener has a connection of its own')
  await handle.pool.query('SELECT pg_terminate_backend($1)', [pid])
  await waitFor(() => payloads.includes(''), 'the reconnect')
  t.same(payloads, [''], 'told once to read the version again')
  t.ok(errors.length >= 1, 'the lost connection was reported')
  const [again] = await listeningBackends(handle)
  t.not(again, pid, 'a new connection')

  await importFile(handle, small)
  await waitFor(() => payloads.length === 2, 'a notification after the reconnect')
  t.same(payloads, ['', String(base + 1)])
})

t.test('postgres: a listener that cannot connect keeps retrying without failing, until stopped', async (t) => {
  // Nothing listens on port 1: every attempt is refused at once.
  const handle = await openDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 500 })
  const errors: unknown[] = []
  const payloads: string[] = []
  const stop = await handle.listen(CHANGES_CHANNEL, (payload) => payloads.push(payload), (err) => errors.push(err))
  t.equal(errors.length, 1, 'the first attempt failed and was reported')
  await waitFor(() => errors.length >= 3, 'two retries (after 250 and 500 ms)')
  await stop()
  const count = errors.length
  await sleep(1200)
  t.equal(errors.length, count, 'no attempt after stopping')
  t.same(payloads, [])
  await handle.close()
})

t.test('postgres: stopping while a reconnection is still connecting ends it at once', async (t) => {
  // A host that drops the first connection and then accepts connections without ever answering.
  const sockets: net.Socket[] = []
  let closed = 0
  const server = net.createServer((socket) => {
    sockets.push(socket)
    socket.on('error', () => {})
    socket.on('close', () => { closed++ })
    socket.resume()
    if (sockets.length === 1) socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise((resolve) => server.close(resolve))
  })
  const { port } = server.address() as net.AddressInfo
  const handle = await openDatabase({ url: `postgres://postgres@127.0.0.1:${port}/none`, connectionTimeoutMillis: 20_000 })
  t.teardown(() => handle.close())
  const stop = await handle.listen(CHANGES_CHANNEL, () => {}, () => {})
  await waitFor(() => sockets.length === 2, 'the reconnection to reach the host')
  const started = Date.now()
  await stop()
  t.ok(Date.now() - started < 1000, `stopped in ${Date.now() - started} ms, not after the connect timeout`)
  await waitFor(() => closed === 2, 'the pending connection to be closed')
  t.pass('the pending connection was closed')
})

t.test('postgres: closing the handle ends its listening connections', async (t) => {
  const url = await createPostgresDatabase(t)
  const handle = await openDatabase({ url })
  await migrateToLatest(handle.db)
  await handle.listen(CHANGES_CHANNEL, () => {})
  await handle.listen('another_channel', () => {})
  const name = new URL(url).pathname.slice(1)
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  t.teardown(() => admin.end())
  const listening = async () => (await admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE \'LISTEN%\'', [name])).rows[0].n
  t.equal(await listening(), 2)
  await handle.close()
  await waitFor(async () => (await listening()) === 0, 'the listening connections to end')
  await sleep(400)
  t.equal(await listening(), 0, 'and none comes back')
  await t.rejects(handle.listen(CHANGES_CHANNEL, () => {}), /closed/, 'a closed handle listens no more')
})

// Last in the file: it closes the shared PGlite database (the file's teardown closes it again, harmlessly).
t.test('pglite: closing the handle with a listener open', async (t) => {
  const handle = await sharedDatabase('pglite')
  const stop = await handle.listen(CHANGES_CHANNEL, () => {})
  await handle.close()
  await stop()
  await handle.close()
  t.pass('closes, and a later unsubscribe or close is harmless')
})
