import pg from 'pg'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { tmpdir } from 'node:os'
import type { PGlite } from '@electric-sql/pglite'
import { Kysely, PostgresDialect } from './kysely.ts'
import type { Database } from './types.ts'
import { once, type DatabaseHandle, type DatabaseOptions } from './handle.ts'
import { listenerRegistry, pgliteListener } from './listen.ts'
import { acquireEmbeddedLock, LOCK_FILE, type EmbeddedLock } from './embedded-lock.ts'
import { fitsSocketAddress, isPrivateDir, makePrivate } from '../lib/private-dir.ts'

/**
 * The embedded database (PGlite): a directory this process owns (its lock refuses other processes), or
 * `memory://`; a first start creates the cluster in a child process. The directory is this user's
 * alone (0700) from before the lock is taken; the files in it, which PGlite creates 0666, are closed
 * to group and others at every open and close.
 */
export async function openEmbedded (options: DatabaseOptions): Promise<DatabaseHandle> {
  const { PGlite } = await import('@electric-sql/pglite')
  const { createPgConfig } = await import('@electric-sql/pglite/node-postgres')
  // pg_trgm: the placemark text search's index (migration 012).
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm')
  const dir = options.pgliteDir ?? './data/pglite'
  const startParams = pgliteStartParams(PGlite.defaultStartParams, options.pgliteSharedBuffersMb ?? PGLITE_SHARED_BUFFERS_MB)
  let lock: EmbeddedLock | null = null
  let pglite: PGlite
  try {
    if (!dir.startsWith('memory://')) {
      const { chmod, mkdir } = await import('node:fs/promises')
      await mkdir(dir, { recursive: true })
      // Before anything is written in it, the lock included (the folders above keep their modes).
      await chmod(dir, 0o700)
      // Before anything else in the directory is read or written: another live owner is refused here.
      lock = acquireEmbeddedLock(dir, options.owner ?? defaultOwner())
      if (lock.tookOverFrom) options.onStaleLock?.(lock.tookOverFrom)
      if (!existsSync(join(dir, 'PG_VERSION'))) await createEmbedded(dir, startParams)
      // What an earlier version, or files PGlite made during the last run, left open.
      await makePrivate(dir)
    }
    pglite = await PGlite.create(dir, { startParams, extensions: { pg_trgm }, ...(dir.startsWith('memory://') && options.pgliteDataDir ? { loadDataDir: options.pgliteDataDir } : {}) })
  } catch (err) {
    lock?.release()
    throw err
  }
  // PGlite is one connection; the pool keeps that single client open for good.
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 } as pg.PoolConfig)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  const listeners = listenerRegistry()
  const listen = pgliteListener(pglite, pool)
  return {
    db,
    pool,
    kind: 'pglite',
    listen: (channel, onNotify, onError) => listeners.add(() => listen(channel, onNotify, onError)),
    dumpDataDir: () => pglite.dumpDataDir('none'),
    close: once(async () => {
      await listeners.stopAll()
      await db.destroy()
      try {
        await pglite.close()
        // The files PGlite created while open (0666 behind the 0700 directory) are left closed as well.
        if (lock) await makePrivate(dir)
      } finally {
        lock?.release()
      }
    })
  }
}

// PGlite's default shared_buffers (128 MB) is most of an idle server's memory; the datasets served here
// fit in a fraction of it, and PostgreSQL reads the rest through the operating system's cache.
export const PGLITE_SHARED_BUFFERS_MB = 16

function pgliteStartParams (defaults: string[], sharedBuffersMb: number): string[] {
  return [...defaults, '-c', `shared_buffers=${sharedBuffersMb}MB`]
}

// 'the command scripts/import.ts' for a CLI, 'the process node …' for anything else.
function defaultOwner (): string {
  const script = process.argv[1]
  if (!script) return `the process ${process.argv0}`
  const rel = relative(process.cwd(), script)
  return `the command ${rel.startsWith('..') ? script : rel}`
}

// Where a new embedded database is built before its files are moved into the directory.
const STAGING = '.initialising'

/**
 * A new embedded database is created in a short-lived child process: PGlite's initdb runs in a second,
 * throw-away PostgreSQL instance whose few hundred MB of WebAssembly memory would otherwise stay with
 * this process (they are garbage only a rare full collection returns). The child runs under this
 * process's lock and ends when this process does (its stdin closes). It builds the database in a
 * staging folder whose files are then moved into the directory, PG_VERSION last: a first start that
 * is interrupted leaves no half-made database that would later be taken for a whole one.
 */
async function createEmbedded (dir: string, startParams: string[]): Promise<void> {
  const { readdir, rename, rm } = await import('node:fs/promises')
  const staging = join(dir, STAGING)
  await rm(staging, { recursive: true, force: true })
  const foreign = (await readdir(dir)).filter((name) => name !== LOCK_FILE && name !== STAGING)
  if (foreign.length) {
    throw new Error('the directory holds files but no database (no PG_VERSION; an interrupted first start?): empty it, or set PGLITE_DIR to a new directory')
  }
  await initdbInChild(staging, startParams)
  const names = (await readdir(staging)).sort((a, b) => Number(a === 'PG_VERSION') - Number(b === 'PG_VERSION'))
  for (const name of names) await rename(join(staging, name), join(dir, name))
  await rm(staging, { recursive: true, force: true })
}

async function initdbInChild (dir: string, startParams: string[]): Promise<void> {
  const { spawn } = await import('node:child_process')
  const code = [
    'const [url, dir, startParams] = JSON.parse(process.argv[1])',
    "process.stdin.on('end', () => process.exit(1)).resume()",
    'const { PGlite } = await import(url)',
    'const pg = await PGlite.create(dir, { startParams })',
    'await pg.close()',
    'process.exit(0)'
  ].join('\n')
  const args = JSON.stringify([import.meta.resolve('@electric-sql/pglite'), dir, startParams])
  const child = spawn(process.execPath, ['--input-type=module', '-e', code, args], { stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr = (stderr + d).slice(-4000) })
  const exit = await new Promise<number | string>((resolve) => {
    child.once('error', (err) => resolve(err.message))
    child.once('close', (status, signal) => resolve(status ?? signal ?? 1))
  })
  child.stdin.destroy()
  if (exit === 0) return
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('at '))
  const cause = lines.find((l) => /error/i.test(l)) ?? lines.at(-1) ?? `exit ${exit}`
  throw new Error(`initdb failed: ${cause}`)
}

// The command socket inside the database directory; where that path is too long for a socket's address,
// the file there that names the private folder the socket is in instead.
const COMMAND_SOCKET = 'commands.sock'
const COMMAND_SOCKET_ELSEWHERE = 'commands.sock.path'

export interface CommandSocketPlace {
  path: string
  /** Removes the socket, and the folder made for it. */
  remove(): Promise<void>
}

/**
 * Where the server that owns the embedded database in `dir` (an absolute path) takes commands: a Unix
 * socket in the directory itself, which only this user may enter, so the socket is never reachable by
 * anyone else, whatever its own mode. When that path passes the length of a socket's address, a new
 * private (0700) folder in the system's temporary folder holds it, and the directory names it for the
 * commands (findCommandSocket). Removes what a server that was killed left; call it holding the lock.
 */
export async function placeCommandSocket (dir: string): Promise<CommandSocketPlace> {
  const { mkdtemp, rename, rm, rmdir, writeFile } = await import('node:fs/promises')
  const inside = join(dir, COMMAND_SOCKET)
  const pointer = join(dir, COMMAND_SOCKET_ELSEWHERE)
  const earlier = findCommandSocket(dir)
  // A socket, and the folder made for it alone (rmdir removes only an empty one).
  if (earlier && earlier !== inside) {
    await rm(earlier, { force: true })
    await rmdir(dirname(earlier))
  }
  await rm(inside, { force: true })
  await rm(pointer, { force: true })
  if (fitsSocketAddress(inside)) return { path: inside, remove: () => rm(inside, { force: true }) }
  const folder = await mkdtemp(join(tmpdir(), 'pglite-commands-'))
  const path = join(folder, COMMAND_SOCKET)
  if (!fitsSocketAddress(path)) {
    await rm(folder, { recursive: true, force: true })
    throw new Error(`no place for the command socket: both ${inside} and ${path} are too long for a Unix socket's address; set TMPDIR to a shorter folder, or PGLITE_DIR to a shorter path`)
  }
  // Written whole, then renamed: a command never reads half a path.
  await writeFile(`${pointer}.tmp`, path, { mode: 0o600 })
  await rename(`${pointer}.tmp`, pointer)
  return {
    path,
    remove: async () => {
      await rm(pointer, { force: true })
      await rm(folder, { recursive: true, force: true })
    }
  }
}

/**
 * The command socket of the server that owns the embedded database in `dir` (an absolute path), if it
 * is there: only in a folder of this user's that nobody else may write, never at a place another user
 * could have taken.
 */
export function findCommandSocket (dir: string): string | null {
  let path = join(dir, COMMAND_SOCKET)
  if (!fitsSocketAddress(path)) {
    try {
      path = readFileSync(join(dir, COMMAND_SOCKET_ELSEWHERE), 'utf8')
    } catch {
      return null
    }
  }
  return isPrivateDir(dirname(path)) && existsSync(path) ? path : null
}
