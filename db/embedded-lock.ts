import { randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

/**
 * One process owns an embedded (PGlite) database directory: PGlite is PostgreSQL in single-user mode,
 * and two of them writing the same files lose or corrupt data. The owner is recorded in a lock file
 * inside the directory, created atomically (a fully written file linked into place, so nobody ever
 * reads half a record). A lock whose process is gone (killed, crashed, the machine rebooted) is stale
 * and taken over; a live owner makes every other process refuse before it opens anything.
 */
export const LOCK_FILE = 'owner.lock'

export interface OwnerRecord {
  pid: number
  // Who holds it, for the refusal message: 'the server', 'the command scripts/import.ts'.
  owner: string
  host: string
  // Linux: the kernel's boot id and the process's start time (clock ticks since boot), which tell a
  // live owner from a later process that happens to have the same pid. Absent elsewhere.
  boot?: string
  started?: string
  since: string
  nonce: string
}

export type OwnerState = 'alive' | 'dead' | 'elsewhere'

export class EmbeddedDatabaseInUse extends Error {
  override name = 'EmbeddedDatabaseInUse'
  readonly dir: string
  readonly holder: OwnerRecord
  readonly state: OwnerState
  constructor (dir: string, holder: OwnerRecord, state: OwnerState) {
    super(inUseMessage(dir, holder, state))
    this.dir = dir
    this.holder = holder
    this.state = state
  }
}

function inUseMessage (dir: string, holder: OwnerRecord, state: OwnerState): string {
  const who = holder.pid === process.pid ? `this process (pid ${holder.pid})` : `${holder.owner} with pid ${holder.pid}`
  const where = state === 'elsewhere' ? ` on host ${holder.host}` : ''
  const stale = state === 'elsewhere' ? ` (if that process is gone, delete ${join(dir, LOCK_FILE)})` : ''
  return `the embedded database in ${dir} is in use by ${who}${where}; stop it, or set DATABASE_URL to use PostgreSQL${stale}`
}

export interface EmbeddedLock {
  readonly path: string
  readonly record: OwnerRecord
  // The stale record this lock replaced, if any (its process was gone).
  readonly tookOverFrom: OwnerRecord | null
  /** Gives the directory up; only removes the lock file while it is still this lock's. */
  release(): void
}

// Lock files held by this process: a record naming this pid is live only if it is one of these.
const heldHere = new Set<string>()

const readText = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

let bootId: string | undefined | null = null
function currentBootId (): string | undefined {
  if (bootId === null) bootId = readText('/proc/sys/kernel/random/boot_id')?.trim() || undefined
  return bootId
}

/** Linux: a process's state letter and start time from /proc/<pid>/stat; null where there is none. */
function procStat (pid: number): { state: string; started: string } | null {
  let text: string | null
  try {
    text = readText(`/proc/${pid}/stat`)
  } catch {
    return null
  }
  if (!text) return null
  // The command name (field 2) may hold spaces and parentheses: the fields that follow come after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: fields[0], started: fields[19] }
}

function describeThisProcess (owner: string): OwnerRecord {
  const stat = procStat(process.pid)
  return {
    pid: process.pid,
    owner,
    host: hostname(),
    ...(currentBootId() && stat ? { boot: currentBootId(), started: stat.started } : {}),
    since: new Date().toISOString(),
    nonce: randomBytes(8).toString('hex')
  }
}

function parse (text: string): OwnerRecord | null {
  try {
    const r = JSON.parse(text) as OwnerRecord
    return Number.isInteger(r.pid) && r.pid > 0 && typeof r.nonce === 'string' ? r : null
  } catch {
    return null
  }
}

/** Whether the process a record names still runs: 'elsewhere' when it ran on another host (unknowable). */
export function ownerState (record: OwnerRecord, lockPath?: string): OwnerState {
  if (record.host !== hostname()) return 'elsewhere'
  const boot = currentBootId()
  if (record.boot && boot && record.boot !== boot) return 'dead'
  // A record naming this very pid is a previous life of it (a restarted container, say) unless this
  // process holds it now.
  if (record.pid === process.pid) return lockPath && heldHere.has(lockPath) ? 'alive' : 'dead'
  try {
    process.kill(record.pid, 0)
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return 'dead'
  }
  const stat = procStat(record.pid)
  if (stat) {
    // A zombie has ended; a different start time is a newer process that reuses the pid.
    if (stat.state === 'Z' || stat.state === 'X') return 'dead'
    if (record.started && record.boot === boot && stat.started !== record.started) return 'dead'
  }
  return 'alive'
}

/** The record in a directory's lock file, if there is one (null also for an unreadable record). */
export function readOwner (dir: string): OwnerRecord | null {
  const text = readText(join(dir, LOCK_FILE))
  return text === null ? null : parse(text)
}

/**
 * Creates the lock file holding `text` only if there is none: the text is written and flushed to a file
 * of this process first, then hard-linked into place (link fails when the name exists), so the lock
 * file never exists half written. Where hard links are not supported, an exclusive create stands in.
 */
function createExclusive (path: string, text: string, nonce: string): boolean {
  const temp = `${path}.${process.pid}-${nonce}.tmp`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, path)
    return true
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return false
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw err
    let direct: number
    try {
      direct = openSync(path, 'wx', 0o600)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false
      throw e
    }
    try {
      writeSync(direct, text)
      fsyncSync(direct)
    } finally {
      closeSync(direct)
    }
    return true
  } finally {
    try { unlinkSync(temp) } catch { /* already gone */ }
  }
}

/**
 * Takes the directory for this process, or throws EmbeddedDatabaseInUse naming the live owner. The
 * directory must exist. Nothing in it but the lock file is read or written. The lock is released by
 * release(), and at the latest when the process exits; a process killed outright leaves a stale lock,
 * which the next owner takes over.
 */
export function acquireEmbeddedLock (dir: string, owner: string): EmbeddedLock {
  const path = join(dir, LOCK_FILE)
  const record = describeThisProcess(owner)
  const text = `${JSON.stringify(record, null, 2)}\n`
  let tookOverFrom: OwnerRecord | null = null
  // A few rounds: each lost race (a lock appearing or vanishing between two steps) costs one. A live
  // owner's lock is only read: the refused process writes nothing, not even a temporary file.
  for (let round = 0; round < 8; round++) {
    const found = readText(path)
    if (found === null) {
      if (createExclusive(path, text, record.nonce)) {
        heldHere.add(path)
        return held(path, record, tookOverFrom)
      }
      continue
    }
    const holder = parse(found)
    // An unreadable record was not written by a lock of ours (those are never half written): stale.
    if (holder) {
      const state = ownerState(holder, path)
      if (state !== 'dead') throw new EmbeddedDatabaseInUse(dir, holder, state)
    }
    // Stale: moved aside under a name of this process's own, so that only the file that was judged
    // stale is removed; should another process have replaced it meanwhile, its lock is put back.
    const aside = `${path}.${process.pid}-${record.nonce}.stale`
    try {
      renameSync(path, aside)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw err
    }
    const moved = readText(aside)
    if (moved !== found) {
      try { linkSync(aside, path) } catch { /* a third process got there first; its lock stands */ }
    } else if (holder) {
      tookOverFrom = holder
    }
    unlinkSync(aside)
  }
  throw new Error(`could not take the lock ${path}: other processes keep taking it over`)
}

function held (path: string, record: OwnerRecord, tookOverFrom: OwnerRecord | null): EmbeddedLock {
  let released = false
  const release = () => {
    if (released) return
    released = true
    heldHere.delete(path)
    process.removeListener('exit', release)
    try {
      // Only this lock's own file: after a takeover by another process (this one was thought dead), the
      // file is theirs.
      if (parse(readText(path) ?? '')?.nonce === record.nonce) unlinkSync(path)
    } catch { /* the directory is gone or unwritable: nothing left to release */ }
  }
  process.on('exit', release)
  return { path, record, tookOverFrom, release }
}
