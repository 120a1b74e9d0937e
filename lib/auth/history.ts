/** The security history's pages: a sealed cursor naming the last row seen, and events as answered. */
import { cursorCodec, type CursorCodec } from '../cursor.ts'

const isRowId = (value: unknown): value is string => typeof value === 'string' && /^[1-9]\d{0,18}$/.test(value)

/**
 * The cursors of one history listing ('history': a user's own; 'audit': the admin trail): the last row id
 * seen, sealed (lib/cursor.ts), so a client can neither read the id nor write a cursor of its own.
 */
export const historyCursors = (listing: 'history' | 'audit', secret: string | undefined): CursorCodec<string> =>
  cursorCodec(`security-${listing}`, secret, isRowId)

export interface StoredEvent { id: string; at: Date; type: string; user_id: string | null; actor_id: string | null; data: Record<string, unknown> }

/** One event as the history answers it: its type, its time and its own fields; the admin view adds who. */
export function eventBody (row: StoredEvent, admin = false): Record<string, unknown> {
  const body: Record<string, unknown> = { type: row.type, createdAt: row.at.toISOString(), ...row.data }
  if (admin) {
    body.userId = row.user_id
    body.adminId = row.actor_id
  }
  return body
}

/**
 * A page of `limit` events read as limit + 1 rows: the events and the cursor of the next page, sealed for
 * the scope of the query that read them.
 */
export function page (rows: StoredEvent[], limit: number, next: { cursors: CursorCodec<string>; scope: string }, admin = false): { events: Record<string, unknown>[]; nextCursor: string | null } {
  const more = rows.length > limit
  const shown = more ? rows.slice(0, limit) : rows
  return { events: shown.map((r) => eventBody(r, admin)), nextCursor: more ? next.cursors.encode(String(shown[shown.length - 1]!.id), next.scope) : null }
}
