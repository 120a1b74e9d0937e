import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'

/** The NOTIFY channel of the change bus; each payload is `{"kind": …, "key": …}` as JSON. */
export const CHANGES_CHANNEL = 'changes'

/** What changed: `dataset` (key: the new version), `session` (a session id that ended), `user` (a user id written or deleted), `activity` (a guild id with new events). */
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

/** The changes logged at or after `since`, and the database's clock now (the next call's starting point). */
export async function changesSince (db: Kysely<Database>, since: Date): Promise<{ changes: Change[]; now: Date }> {
  const { rows } = await sql<{ kind: ChangeKind; key: string; now: Date }>`
    SELECT kind, key, now() AS now FROM change_log WHERE at >= ${since} ORDER BY id`.execute(db)
  const now = rows[0]?.now ?? await databaseNow(db)
  return { changes: rows.map(({ kind, key }) => ({ kind, key })), now }
}

/** Deletes the log older than `ageMs`: only a listener that was away for that long would still need it. */
export async function pruneChanges (db: Kysely<Database>, ageMs: number): Promise<number> {
  const result = await sql`DELETE FROM change_log WHERE at < now() - make_interval(secs => ${ageMs / 1000})`.execute(db)
  return Number(result.numAffectedRows ?? 0)
}
