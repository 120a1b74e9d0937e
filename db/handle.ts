import type pg from 'pg'
import type { Kysely } from 'kysely'
import type { Database } from './types.ts'
import type { OwnerRecord } from './embedded-lock.ts'

export interface DatabaseOptions {
  url?: string
  // PostgreSQL: where the listening connection goes, when `url` is a transaction-pooling proxy that cannot carry LISTEN.
  listenUrl?: string
  pgliteDir?: string
  poolMax?: number
  connectionTimeoutMillis?: number
  statementTimeoutMillis?: number
  // Client-side bound on waiting for a query's answer (packets dropped silently); 0 or unset: none.
  queryTimeoutMillis?: number
  // Embedded database: who this process is, as other processes refused the directory are told
  // ('the server', 'the command scripts/import.ts'); by default the script's name.
  owner?: string
  // Embedded database: called when the directory's lock was left by a process that is gone and is taken over.
  onStaleLock?: (previous: OwnerRecord) => void
  // Embedded database: PostgreSQL's shared_buffers in MB (PGlite's own default is 128).
  pgliteSharedBuffersMb?: number
  // Embedded database in memory: start from this copy of a data directory (see dumpDataDir) instead of
  // creating a new cluster, which takes seconds.
  pgliteDataDir?: Blob
}

export interface DatabaseHandle {
  db: Kysely<Database>
  pool: pg.Pool
  kind: 'postgres' | 'pglite'
  // PostgreSQL: the connection string the pool uses, for work that opens its own connection elsewhere (the box index's builder process).
  url?: string
  /**
   * Calls onNotify with the payload of each NOTIFY on the channel, and with '' when notifications may
   * have been lost (the listening connection was re-established). Errors go to onError, never thrown.
   * Resolves, once listening, to a function that stops it; close() stops every listener still open.
   */
  listen(channel: string, onNotify: (payload: string) => void, onError?: (err: unknown) => void): Promise<() => Promise<void>>
  // Embedded database: a copy of its data directory, to start other in-memory databases from.
  dumpDataDir?: () => Promise<Blob>
  close(): Promise<void>
}

export type Unsubscribe = () => Promise<void>

// Closing twice (a shutdown path and a teardown, say) waits for the one close rather than failing.
export function once (fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null
  return () => (done ??= fn())
}
