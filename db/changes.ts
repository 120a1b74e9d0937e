import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'

/** The NOTIFY channel of the change bus; each payload is `{"kind": …, "key": …}` as JSON. */
export const CHANGES_CHANNEL = 'changes'

/** What changed: `dataset` (key: the new version), `session` (a session id that ended), `user` (a user id written or deleted), `activity` (what a load stored for a guild, as JSON: lib/activity/live.ts). */
export type ChangeKind = 'dataset' | 'session' | 'user' | 'activity'

export interface Change { kind: ChangeKind; key: string }

/** A notification's payload read back; null for anything that is not one. */
export function parseChange (payload: string): Change | null {
  try {
    const value = JSON.parse(payload) as Partial<Change>
    return typeof value.kind === 'string' && typeof value.key === 'string' ? { kind: value.kind as ChangeKind, key: value.key } : null
  } catch {
    return null
  }
}

/**
 * Announces a change in the caller's transaction (the tables with triggers announce their own): it
 * reaches the other instances when the transaction commits, and never if it rolls back.
 */
export async function emitChange (db: Kysely<Database>, change: Change): Promise<void> {
  await sql`SELECT emit_change(${change.kind}, ${change.key})`.execute(db)
}

/** The database's clock now: where a listener's first read of the log starts. */
export async function databaseNow (db: Kysely<Database>): Promise<Date> {
  return (await sql<{ now: Date }>`SELECT now() AS now`.execute(db)).rows[0]!.now
}

/**
 * One read of the change log: the changes logged at or after `since` (in one snapshot), the database's
 * clock at the read, and two transaction ids: `oldest`, the oldest transaction still running at the
 * read, and `next`, the read's own, later than every transaction begun before it (the snapshot's own
 * upper bound is not: a running transaction past every completed one is beyond it). A change logged
 * before the read belongs to a transaction below `next`; once `oldest` has passed that, every such
 * change is committed (or rolled back) and was visible to a later read.
 */
export interface ChangeLogRead { changes: Change[]; now: Date; oldest: bigint; next: bigint }

export async function changesSince (db: Kysely<Database>, since: Date): Promise<ChangeLogRead> {
  const { rows } = await sql<{ kind: ChangeKind | null; key: string | null; now: Date; oldest: string; next: string }>`
    SELECT c.kind, c.key, s.now, s.oldest, s.next
    FROM (SELECT now() AS now, pg_snapshot_xmin(pg_current_snapshot())::text AS oldest, pg_current_xact_id()::text AS next) s
    LEFT JOIN change_log c ON c.at >= ${since}
    ORDER BY c.id`.execute(db)
  const { now, oldest, next } = rows[0]!
  const changes = rows.filter((r) => r.kind !== null).map(({ kind, key }) => ({ kind: kind!, key: key! }))
  return { changes, now, oldest: BigInt(oldest), next: BigInt(next) }
}

/** Deletes the log older than `ageMs`: only a listener that was away for that long would still need it. */
export async function pruneChanges (db: Kysely<Database>, ageMs: number): Promise<number> {
  const result = await sql`DELETE FROM change_log WHERE at < now() - make_interval(secs => ${ageMs / 1000})`.execute(db)
  return Number(result.numAffectedRows ?? 0)
}
