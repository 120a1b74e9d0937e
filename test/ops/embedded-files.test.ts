import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { embeddedEnv, startEmbeddedServer, type EmbeddedServer } from '../support/embedded-server.ts'
import { spawnScript } from '../support/run.ts'
import { findCommandSocket, placeCommandSocket } from '../../db/embedded.ts'
import { isPrivateDir, makePrivate } from '../../lib/private-dir.ts'

// Real servers and commands on one embedded database directory: the first start creates and seeds it.
t.setTimeout(900_000)

const uid = process.getuid!()
// Another user of the machine: root can act as nobody, so what others can reach is tried, not inferred.
const NOBODY = 65534
const asNobody = uid === 0 && spawnSync('setpriv', ['--version']).status === 0
const nobodySkip = asNobody ? false : 'needs root and setpriv to act as another user'
const nobodyCan = (script: string): boolean =>
  spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'sh', '-c', script], { stdio: 'ignore' }).status === 0
const quote = (path: string) => `'${path.replaceAll("'", "'\\''")}'`

// The folder of this file's databases, open to others as a project or home folder usually is.
const base = mkdtempSync(join(tmpdir(), 'pgf-'))
chmodSync(base, 0o755)
t.teardown(() => rmSync(base, { recursive: true, force: true }))

// Where servers before this change put the command socket: a name anyone can take in the shared temporary folder.
const oldSocketPath = (dir: string) => join(tmpdir(), `pglite-commands-${createHash('sha256').update(dir).digest('hex').slice(0, 16)}.sock`)

type Server = EmbeddedServer
const startServer = startEmbeddedServer

async function stop (t: Test, server: Server): Promise<void> {
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'the server stops and exits 0')
}

// The Unix sockets a process listens on, from the kernel's own table (Linux).
function listeningSockets (pid: number): string[] {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]
      if (inode) inodes.add(inode)
    } catch { /* closed meanwhile */ }
  }
  return readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 8 && inodes.has(fields[6]) && fields[7].startsWith('/'))
    .map((fields) => fields[7])
}

// Every file and folder under dir that grants its group or others anything, with its mode.
function openToOthers (dir: string): string[] {
  const found: string[] = []
  const walk = (path: string) => {
    const s = lstatSync(path)
    if (s.isSymbolicLink()) return
    if (s.mode & 0o077) found.push(`${(s.mode & 0o777).toString(8)} ${path.slice(dir.length) || '/'}`)
    if (s.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name))
  }
  walk(dir)
  return found
}

// What an older version left: every folder 0755, every file 0666.
function loosen (path: string): void {
  const s = lstatSync(path)
  if (s.isSymbolicLink()) return
  if (s.isDirectory()) {
    chmodSync(path, 0o755)
    for (const name of readdirSync(path)) loosen(join(path, name))
  } else {
    chmodSync(path, 0o666)
  }
}

// While the server runs: the directory is this user's alone, and another user reaches nothing in it.
function privateWhileRunning (t: Test, dir: string): void {
  const s = statSync(dir)
  t.equal((s.mode & 0o777).toString(8), '700', 'the database directory is 0700')
  t.equal(s.uid, uid, 'and belongs to the server\'s user')
  t.test('another user reaches nothing in it', { skip: nobodySkip }, async (t) => {
    const wal = readdirSync(join(dir, 'pg_wal')).find((name) => /^[0-9A-F]{24}$/.test(name))!
    const files = ['PG_VERSION', 'postgresql.conf', 'owner.lock', `pg_wal/${wal}`, 'global/pg_control']
    t.notOk(nobodyCan(`ls ${quote(dir)}`), 'cannot list it')
    for (const file of files) {
      t.notOk(nobodyCan(`cat ${quote(join(dir, file))} >/dev/null`), `cannot read ${file}`)
      // Opening for append writes nothing, and is refused without write access.
      t.notOk(nobodyCan(`: >> ${quote(join(dir, file))}`), `cannot write ${file}`)
    }
  })
}

// The server's command socket: in a folder of the server's user that nobody else may enter or write.
function socketIsPrivate (t: Test, server: Server): string {
  const sockets = listeningSockets(server.pid)
  t.equal(sockets.length, 1, `the server listens on one Unix socket (${sockets.join(', ')})`)
  const folder = dirname(sockets[0])
  const s = statSync(folder)
  t.equal((s.mode & 0o777).toString(8), '700', `the socket's folder ${folder} is 0700`)
  t.equal(s.uid, uid, 'and belongs to the server\'s user')
  return sockets[0]
}

// What another user leaves at the old socket path: a folder (with a file in it), or a file.
function squat (path: string, kind: 'folder' | 'file'): void {
  if (kind === 'folder') {
    mkdirSync(path)
    writeFileSync(join(path, 'mine'), 'mine')
  } else {
    writeFileSync(path, 'mine')
  }
  if (uid === 0) {
    if (kind === 'folder') chownSync(join(path, 'mine'), NOBODY, NOBODY)
    chownSync(path, NOBODY, NOBODY)
  }
  t.teardown(() => rmSync(path, { recursive: true, force: true }))
}

async function commandReachesServer (t: Test, dir: string, server: Server): Promise<void> {
  const migrated = await spawnScript('scripts/migrate.ts', [], embeddedEnv(dir))
  t.same([migrated.code, migrated.stderr.trim()], [0, 'database migrated (pglite)'], 'npm run migrate beside the server runs')
  t.match(server.output(), /running a command sent by a process beside the server/, 'inside the server, through its socket')
}

t.test('the embedded database directory and the command socket are the server user\'s alone', async (t) => {
  let dir = join(base, 'pglite')

  await t.test('a first start makes the directory private; the socket is in a private folder', async (t) => {
    const server = await startServer(t, dir)
    privateWhileRunning(t, dir)
    socketIsPrivate(t, server)
    await commandReachesServer(t, dir, server)
    await stop(t, server)
    t.same(openToOthers(dir), [], 'stopped: no file or folder under it grants its group or others anything')
  })

  await t.test('a directory left open by an older version is closed at start; a folder at the old socket path changes nothing', async (t) => {
    loosen(dir)
    t.not(openToOthers(dir).length, 0, 'every file 0666 and folder 0755, as an older version left them')
    squat(oldSocketPath(dir), 'folder')
    const server = await startServer(t, dir)
    privateWhileRunning(t, dir)
    socketIsPrivate(t, server)
    await commandReachesServer(t, dir, server)
    t.ok(statSync(oldSocketPath(dir)).isDirectory(), 'the other user\'s folder is left alone')
    await stop(t, server)
    t.same(openToOthers(dir), [], 'stopped: no file or folder under it grants its group or others anything')
  })

  await t.test('a directory whose path is too long for a socket in it; a file at the old socket path changes nothing', async (t) => {
    const long = join(base, 'd'.repeat(110))
    renameSync(dir, long)
    dir = long
    squat(oldSocketPath(dir), 'file')
    const server = await startServer(t, dir)
    privateWhileRunning(t, dir)
    const socket = socketIsPrivate(t, server)
    t.ok(Buffer.byteLength(socket) <= 107, 'the socket\'s path fits a Unix socket address')
    if (asNobody) t.notOk(nobodyCan(`ls ${quote(dirname(socket))}`), 'another user cannot enter the socket\'s folder')
    await commandReachesServer(t, dir, server)
    t.equal(readFileSync(oldSocketPath(dir), 'utf8'), 'mine', 'the other user\'s file is left alone')
    await stop(t, server)
    t.notOk(existsSync(dirname(socket)), 'stopped: the socket\'s folder is gone')
    t.same(openToOthers(dir), [], 'no file or folder under the directory grants its group or others anything')
  })
})

t.test('closing a directory to others (in process)', async (t) => {
  const dir = join(mkdtempSync(join(base, 'close-')), 'db')
  mkdirSync(join(dir, 'base', '1'), { recursive: true })
  writeFileSync(join(dir, 'base', '1', '1259'), '')
  writeFileSync(join(dir, 'PG_VERSION'), '16')
  const outside = join(base, 'outside.txt')
  writeFileSync(outside, 'not the database\'s')
  symlinkSync(outside, join(dir, 'link'))
  loosen(dir)
  chmodSync(outside, 0o644)
  t.notOk(isPrivateDir(dir), 'a 0755 folder is not private')
  await makePrivate(dir)
  t.same(openToOthers(dir), [], 'every file and folder under it is closed to group and others')
  t.ok(isPrivateDir(dir), 'and the folder is private')
  await makePrivate(dir)
  t.same(openToOthers(dir), [], 'closing it again changes nothing')
  t.equal(statSync(outside).mode & 0o777, 0o644, 'a link is not followed out of the directory')
  t.notOk(isPrivateDir(join(dir, 'none')), 'a missing folder is not private')
  t.notOk(isPrivateDir(join(dir, 'PG_VERSION')), 'nor is a file')
  if (uid === 0) {
    chownSync(dir, NOBODY, NOBODY)
    t.notOk(isPrivateDir(dir), 'nor a 0700 folder of another user\'s')
  }
})

t.test('where the command socket is placed and found (in process)', async (t) => {
  const short = mkdtempSync(join(base, 'place-'))
  const inside = await placeCommandSocket(short)
  t.equal(inside.path, join(short, 'commands.sock'), 'in the directory when its path fits a socket\'s address')
  t.equal(findCommandSocket(short), null, 'not found before it listens')
  writeFileSync(inside.path, '')
  t.equal(findCommandSocket(short), inside.path, 'found once it is there')
  chmodSync(short, 0o755)
  t.equal(findCommandSocket(short), null, 'never in a folder others may enter')
  chmodSync(short, 0o700)
  await inside.remove()
  t.notOk(existsSync(inside.path), 'removed')

  const long = join(base, 'p'.repeat(110))
  mkdirSync(long, { mode: 0o700 })
  t.equal(findCommandSocket(long), null, 'a directory too long for a socket, with no server: nothing')
  const killed = await placeCommandSocket(long)
  t.ok(killed.path.startsWith(join(tmpdir(), 'pglite-commands-')), `elsewhere when it would not fit: ${killed.path}`)
  writeFileSync(killed.path, '')
  t.equal(findCommandSocket(long), killed.path, 'found through the file in the directory')
  // A server killed outright leaves its socket and folder: the next one removes them.
  const next = await placeCommandSocket(long)
  t.notOk(existsSync(dirname(killed.path)), 'the folder a killed server left is removed')
  t.not(next.path, killed.path, 'each server makes a folder of its own')
  writeFileSync(next.path, '')
  chmodSync(dirname(next.path), 0o755)
  t.equal(findCommandSocket(long), null, 'not in a folder others may enter, even when the directory names it')
  chmodSync(dirname(next.path), 0o700)
  await next.remove()
  t.same(readdirSync(long), [], 'removed, with the file that named it')
  t.notOk(existsSync(dirname(next.path)), 'and its folder')

  const tmp = process.env.TMPDIR
  const longTmp = join(base, 't'.repeat(100))
  mkdirSync(longTmp)
  process.env.TMPDIR = longTmp
  t.teardown(() => { if (tmp === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = tmp })
  await t.rejects(placeCommandSocket(long), { message: /^no place for the command socket: both .* are too long for a Unix socket's address; set TMPDIR to a shorter folder, or PGLITE_DIR to a shorter path$/ })
  t.same([readdirSync(long), readdirSync(longTmp)], [[], []], 'and leaves nothing behind')
})
