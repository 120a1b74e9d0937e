import { statSync } from 'node:fs'
import { chmod, lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'

// The bits that let a file's group and other users read, write or enter it.
const GROUP_AND_OTHERS = 0o077

/**
 * Closes a directory of this user's to everyone else: the directory itself becomes 0700 (chmod fails
 * with EPERM on another user's directory), so nothing inside can be reached by others whatever its
 * own mode; then every file and folder under it loses its group and other bits too. Symbolic links
 * are left alone (chmod would follow them out of the directory).
 */
export async function makePrivate (dir: string): Promise<void> {
  await chmod(dir, 0o700)
  await closeEntries(dir)
}

async function closeEntries (dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const path = join(dir, name)
    const s = await lstat(path)
    if (s.isSymbolicLink()) continue
    if (s.mode & GROUP_AND_OTHERS) await chmod(path, s.mode & 0o700)
    if (s.isDirectory()) await closeEntries(path)
  }
}

/** Whether `dir` is a directory of this user's that nobody else may enter, list or write. */
export function isPrivateDir (dir: string): boolean {
  try {
    const s = statSync(dir)
    return s.isDirectory() && (s.mode & GROUP_AND_OTHERS) === 0 && s.uid === process.getuid?.()
  } catch {
    return false
  }
}

// A Unix socket's address holds at most 107 bytes of path on Linux (103 on macOS and the BSDs); Node
// silently cuts a longer one, which would bind somewhere else.
const SOCKET_PATH_MAX = process.platform === 'linux' ? 107 : 103

export function fitsSocketAddress (path: string): boolean {
  return Buffer.byteLength(path) <= SOCKET_PATH_MAX
}
