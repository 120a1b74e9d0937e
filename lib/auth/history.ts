/** The security history's pages: an opaque cursor naming the last row id seen, and events as answered. */

const PREFIX = 'h:'

export function encodeCursor (id: string): string {
  return Buffer.from(`${PREFIX}${id}`).toString('base64url')
}

/** The row id a cursor names, or null for a cursor this server did not make. */
export function decodeCursor (cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  return new RegExp(`^${PREFIX}[1-9]\\d{0,18}$`).test(text) ? text.slice(PREFIX.length) : null
}

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

/** A page of `limit` events read as limit + 1 rows: the events and the cursor of the next page. */
export function page (rows: StoredEvent[], limit: number, admin = false): { events: Record<string, unknown>[]; nextCursor: string | null } {
  const more = rows.length > limit
  const shown = more ? rows.slice(0, limit) : rows
  return { events: shown.map((r) => eventBody(r, admin)), nextCursor: more ? encodeCursor(shown[shown.length - 1]!.id) : null }
}
