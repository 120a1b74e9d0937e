import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../helper.ts'
import { embeddedEnv, startEmbeddedServer, type EmbeddedServer } from '../support/embedded-server.ts'
import { spawnScript, type Run } from '../support/run.ts'
import { acquireEmbeddedLock, EmbeddedDatabaseInUse, LOCK_FILE, readOwner, type OwnerRecord } from '../../db/embedded-lock.ts'
import { openDatabase } from '../../db/index.ts'

// Real servers and commands on one embedded database directory: the first start creates and seeds it,
// which a busy machine can stretch well past tap's default per-file time.
t.setTimeout(900_000)

const inUse = (dir: string, pid: number) => `the embedded database in ${dir} is in use by the server with pid ${pid}; stop it, or set DATABASE_URL to use PostgreSQL`

type Server = EmbeddedServer
const startServer = startEmbeddedServer

const stats = async (server: Server) => (await fetch(`${server.base}/api/v1/stats`)).json() as Promise<{ total_placemarks: number }>

const oneLine = (t: Test, run: Run, line: string, what: string) => {
  t.equal(run.code, 1, `${what}: exit 1`)
  t.equal(run.stderr.trim(), line, `${what}: the one line`)
  t.equal(run.stderr.trim().split('\n').length, 1, `${what}: nothing else on stderr`)
}

// Every file and folder of the directory with its size and modification time (a folder's changes when a
// file is created or removed in it): refused processes must not touch any.
function snapshot (dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    out.push(`${d.slice(dir.length)}/ ${statSync(d).mtimeMs}`)
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name)
      const s = statSync(p)
      if (s.isDirectory()) walk(p)
      else out.push(`${p.slice(dir.length)} ${s.size} ${s.mtimeMs}`)
    }
  }
  walk(dir)
  return out
}

// A pid no process has now: one of a process that has just ended.
async function deadPid (): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await once(child, 'exit')
  return child.pid!
}

t.test('one owner of the embedded database, with real processes', async (t) => {
  const dir = t.testdir({})
  const first = await startServer(t, dir)
  t.equal((await stats(first)).total_placemarks, 57, 'the first start created and seeded the directory')
  t.match(readOwner(dir), { pid: first.pid, owner: 'the server', host: hostname() }, 'the lock names the server')

  await t.test('a second server is refused at once; the commands run inside the running server, served at once', async (t) => {
    const before = snapshot(dir)
    const env = embeddedEnv(dir, { PORT: String(await freePort()) })
    const server = await spawnScript('server.ts', [], env)
    oneLine(t, server, `error: the server could not start: ${inUse(dir, first.pid)}`, 'a second server')
    t.same(snapshot(dir).filter((l) => !l.startsWith('/ ')), before.filter((l) => !l.startsWith('/ ')), 'the refused server wrote no file of the directory, the lock included')

    const imported = await spawnScript('scripts/import.ts', ['test/fixtures/small.kml'], env)
    t.equal(imported.code, 0, `npm run import beside the server lands (${imported.stderr.trim().split('\n').pop()})`)
    t.match(imported.stdout, /imported small\.kml as dataset version 2/)
    t.match(imported.stdout, /placemarks: 7 /)
    t.equal((await stats(first)).total_placemarks, 7, 'and the server serves it at once')
    const migrated = await spawnScript('scripts/migrate.ts', [], env)
    t.same([migrated.code, migrated.stderr.trim()], [0, 'database migrated (pglite)'], 'npm run migrate beside the server')
    const wrong = await spawnScript('scripts/import.ts', ['test/fixtures/nope.kml'], env)
    t.same([wrong.code, wrong.stderr.trim()], [1, 'error: file not found: test/fixtures/nope.kml'], 'a failure is the command\'s own line and code')
    t.match(first.output(), /running a command sent by a process beside the server/, 'the server logs what it ran')
  })

  await t.test('killed outright, the owner leaves a stale lock that the next start takes over', async (t) => {
    first.child.kill('SIGKILL')
    await first.exited
    t.equal(readOwner(dir)?.pid, first.pid, 'the lock of the killed server is still there')
    const next = await startServer(t, dir)
    t.equal((await stats(next)).total_placemarks, 7, 'the data survived the kill')
    t.equal(readOwner(dir)?.pid, next.pid, 'the lock now names the new server')
    t.match(next.output(), new RegExp(`took over the embedded database in .*: its previous owner \\(pid ${first.pid}\\) is no longer running`), 'the takeover is logged')
    next.child.kill('SIGTERM')
    t.equal(await next.exited, 0, 'a stopped server exits 0')
    t.notOk(existsSync(join(dir, LOCK_FILE)), 'and gives the directory up')
  })

  await t.test('a command takes over a stale lock; the next server serves its import', async (t) => {
    const stale: OwnerRecord = { pid: await deadPid(), owner: 'the command scripts/import.ts', host: hostname(), since: new Date().toISOString(), nonce: 'stale' }
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify(stale))
    const run = await spawnScript('scripts/import.ts', ['test/fixtures/small.kml'], embeddedEnv(dir))
    t.equal(run.code, 0, `the command takes the stale lock over and imports (${run.stderr.trim().split('\n').pop()})`)
    t.match(run.stdout, /placemarks: 7 /)
    t.notOk(existsSync(join(dir, LOCK_FILE)), 'the command gave the directory up when it ended')
    const server = await startServer(t, dir)
    t.equal((await stats(server)).total_placemarks, 7, 'the server serves the imported dataset')
    server.child.kill('SIGTERM')
    t.equal(await server.exited, 0)
  })
})

t.test('a directory with files but no database is refused, not initialised over', async (t) => {
  const dir = t.testdir({ 'notes.txt': 'mine' })
  await t.rejects(openDatabase({ pgliteDir: dir }), { message: /^the directory holds files but no database \(no PG_VERSION; an interrupted first start\?\)/ })
  t.same(readdirSync(dir), ['notes.txt'], 'its files are left as they were, and the lock is given back')
})

t.test('the lock file (in process)', async (t) => {
  const dir = t.testdir({})
  const path = join(dir, LOCK_FILE)
  const record = () => JSON.parse(readFileSync(path, 'utf8')) as OwnerRecord

  const lock = acquireEmbeddedLock(dir, 'the server')
  t.match(record(), { pid: process.pid, owner: 'the server', host: hostname(), nonce: lock.record.nonce })
  t.equal(lock.tookOverFrom, null)
  t.throws(() => acquireEmbeddedLock(dir, 'the server'), new EmbeddedDatabaseInUse(dir, lock.record, 'alive'), 'held by this process: refused as well')
  t.match(new EmbeddedDatabaseInUse(dir, lock.record, 'alive').message, `is in use by this process (pid ${process.pid})`)
  lock.release()
  t.notOk(existsSync(path), 'released: the file is gone')
  lock.release()

  // A record naming this pid that this process does not hold: a previous life of the pid (a container restarted).
  writeFileSync(path, JSON.stringify({ ...lock.record, nonce: 'earlier' }))
  const again = acquireEmbeddedLock(dir, 'the server')
  t.equal(again.tookOverFrom?.nonce, 'earlier', 'the pid\'s previous life is taken over')
  // Another process took the directory over meanwhile: releasing leaves its lock alone.
  writeFileSync(path, JSON.stringify({ ...again.record, pid: process.ppid, nonce: 'theirs' }))
  again.release()
  t.equal(record().nonce, 'theirs', 'a lock that is no longer ours is left in place')

  const elsewhere = { ...lock.record, pid: process.ppid, host: 'another-host', nonce: 'remote' }
  writeFileSync(path, JSON.stringify(elsewhere))
  t.throws(() => acquireEmbeddedLock(dir, 'x'), { message: `the embedded database in ${dir} is in use by the server with pid ${process.ppid} on host another-host; stop it, or set DATABASE_URL to use PostgreSQL (if that process is gone, delete ${path})` }, 'a lock from another host is never judged stale')

  const live: OwnerRecord = { pid: process.ppid, owner: 'the server', host: hostname(), since: new Date().toISOString(), nonce: 'live' }
  writeFileSync(path, JSON.stringify(live))
  t.throws(() => acquireEmbeddedLock(dir, 'x'), new EmbeddedDatabaseInUse(dir, live, 'alive'), 'a live process on this host holds it')

  writeFileSync(path, '{"pid": 12')
  const unreadable = acquireEmbeddedLock(dir, 'x')
  t.equal(unreadable.tookOverFrom, null, 'an unreadable record is stale')
  unreadable.release()

  if (lock.record.started) {
    // The same pid with another start time: the pid was reused by a newer process.
    writeFileSync(path, JSON.stringify({ ...live, boot: lock.record.boot, started: '1', nonce: 'reused' }))
    const reused = acquireEmbeddedLock(dir, 'x')
    t.equal(reused.tookOverFrom?.nonce, 'reused', 'a reused pid is not the owner')
    reused.release()
  }
  t.same(readdirSync(dir).filter((n) => n !== LOCK_FILE), [], 'no temporary files are left behind')
})
