import { randomUUID } from 'node:crypto'
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely'
import type { Database, UserTable } from './types.ts'
import type { IdpGuild, IdpUser } from '../lib/auth/idp-client.ts'
import type { Role } from '../lib/auth/types.ts'

type Db = Kysely<Database>
export type UserRow = Selectable<UserTable>

/** Upserts the user by provider id and replaces the stored guild list, in one transaction. */
export async function saveSignIn (db: Db, user: IdpUser, guilds: IdpGuild[]): Promise<UserRow> {
  return db.transaction().execute(async (trx) => {
    const row = await trx.insertInto('users')
      .values({ provider_id: user.id, username: user.username, discriminator: user.discriminator, avatar: user.avatar })
      .onConflict((oc) => oc.column('provider_id').doUpdateSet({
        username: user.username, discriminator: user.discriminator, avatar: user.avatar, updated_at: sql`now()`
      }))
      .returningAll()
      .executeTakeFirstOrThrow()
    await trx.deleteFrom('user_guilds').where('user_id', '=', row.id).execute()
    if (guilds.length) {
      await trx.insertInto('user_guilds')
        .values(guilds.map((g) => ({ user_id: row.id, guild_id: g.id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions })))
        .onConflict((oc) => oc.columns(['user_id', 'guild_id']).doNothing())
        .execute()
    }
    return row
  })
}

// A session ends with its refresh token, never past its absolute lifetime (maxAgeMs from its sign-in).
const sessionEnd = (tokenExpiry: Date, createdAt: number, maxAgeMs: number) => new Date(Math.min(tokenExpiry.getTime(), createdAt + maxAgeMs))

export async function createSession (db: Db, s: { userId: string; tokenHash: string; expiresAt: Date; userAgent: string | null; ip: string | null }, maxAgeMs: number): Promise<string> {
  const id = randomUUID()
  const end = sessionEnd(s.expiresAt, Date.now(), maxAgeMs)
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('sessions').values({ id, user_id: s.userId, expires_at: end, user_agent: s.userAgent, ip: s.ip }).execute()
    await trx.insertInto('refresh_tokens').values({ token_hash: s.tokenHash, session_id: id, expires_at: end }).execute()
  })
  return id
}

export type RotateResult =
  | { kind: 'ok'; sessionId: string; user: UserRow }
  | { kind: 'reused'; sessionId: string }
  | { kind: 'invalid' }

/**
 * Spends a refresh token and records its successor, atomically: of two requests with the same token
 * only one can win. A token already spent means it was copied: the caller revokes the session.
 */
export async function rotateRefreshToken (db: Db, oldHash: string, next: { tokenHash: string; expiresAt: Date }, maxAgeMs: number): Promise<RotateResult> {
  return db.transaction().execute(async (trx) => {
    const spent = await trx.updateTable('refresh_tokens').set({ rotated_at: sql`now()` })
      .where('token_hash', '=', oldHash).where('rotated_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
      .returning('session_id').executeTakeFirst()
    if (!spent) {
      const known = await trx.selectFrom('refresh_tokens').select(['session_id', 'rotated_at']).where('token_hash', '=', oldHash).executeTakeFirst()
      return known?.rotated_at ? { kind: 'reused', sessionId: known.session_id } : { kind: 'invalid' }
    }
    // A session past its absolute lifetime (SESSION_MAX_AGE from its sign-in) is not renewed.
    const session = await trx.selectFrom('sessions').selectAll().where('id', '=', spent.session_id)
      .where('revoked_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
      .where('created_at', '>', sql<Date>`now() - make_interval(secs => ${maxAgeMs / 1000})`).executeTakeFirst()
    if (!session) return { kind: 'invalid' }
    const end = sessionEnd(next.expiresAt, session.created_at.getTime(), maxAgeMs)
    await trx.insertInto('refresh_tokens').values({ token_hash: next.tokenHash, session_id: session.id, expires_at: end }).execute()
    await trx.updateTable('sessions').set({ last_used_at: sql`now()`, expires_at: end }).where('id', '=', session.id).execute()
    const user = await trx.selectFrom('users').selectAll().where('id', '=', session.user_id).executeTakeFirstOrThrow()
    return { kind: 'ok', sessionId: session.id, user }
  })
}

// Revokes a session; with userId, only when it belongs to that user. Returns whether a live session was revoked.
export async function revokeSession (db: Db, sessionId: string, reason: string, userId?: string): Promise<boolean> {
  let q = db.updateTable('sessions').set({ revoked_at: sql`now()`, revoked_reason: reason })
    .where('id', '=', sessionId).where('revoked_at', 'is', null)
  if (userId) q = q.where('user_id', '=', userId)
  const res = await q.executeTakeFirst()
  return Number(res.numUpdatedRows) > 0
}

/** Ids of the sessions revoked at or after `since`: what a starting instance must refuse. */
export async function sessionsRevokedSince (db: Db, since: Date): Promise<string[]> {
  const rows = await db.selectFrom('sessions').select('id').where('revoked_at', '>=', since).execute()
  return rows.map((r) => r.id)
}

export async function sessionOwner (db: Db, sessionId: string): Promise<{ user_id: string; revoked: boolean } | undefined> {
  const row = await db.selectFrom('sessions').select(['user_id', 'revoked_at']).where('id', '=', sessionId).executeTakeFirst()
  return row ? { user_id: row.user_id, revoked: row.revoked_at !== null } : undefined
}

export async function liveSessions (db: Db, userId: string) {
  return db.selectFrom('sessions').select(['id', 'created_at', 'last_used_at', 'expires_at', 'user_agent', 'ip'])
    .where('user_id', '=', userId).where('revoked_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
    .orderBy('created_at', 'desc').execute()
}

export type UserWithGuilds = NonNullable<Awaited<ReturnType<typeof userWithGuilds>>>

export async function userWithGuilds (db: Db, userId: string) {
  const user = await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst()
  if (!user) return undefined
  const guilds = await db.selectFrom('user_guilds').select(['guild_id', 'name', 'icon', 'owner', 'permissions'])
    .where('user_id', '=', userId).orderBy('guild_id').execute()
  return { user, guilds }
}

// Returns the user's id, or undefined when no user has that provider id.
export async function setRole (db: Db, providerId: string, role: Role): Promise<string | undefined> {
  const row = await db.updateTable('users').set({ role, updated_at: sql`now()` }).where('provider_id', '=', providerId).returning('id').executeTakeFirst()
  return row?.id
}

export const isUuid = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

/**
 * Retention: deletes sessions that ended (expired or revoked) more than retentionMs ago, with their
 * refresh-token records, and refresh-token records that expired more than retentionMs ago (a spent
 * one is kept until then so that its reuse is still recognised). In batches, so that no single
 * statement holds many locks. Returns the numbers deleted.
 */
export async function pruneAuthRecords (db: Db, retentionMs: number, batch = 5000): Promise<{ sessions: number; refreshTokens: number }> {
  const cutoff = sql<Date>`now() - make_interval(secs => ${retentionMs / 1000})`
  const sessions = await deleteInBatches(db, batch, sql`DELETE FROM sessions WHERE id IN (
    SELECT id FROM sessions WHERE expires_at < ${cutoff} OR revoked_at < ${cutoff} LIMIT ${batch})`)
  const refreshTokens = await deleteInBatches(db, batch, sql`DELETE FROM refresh_tokens WHERE token_hash IN (
    SELECT token_hash FROM refresh_tokens WHERE expires_at < ${cutoff} LIMIT ${batch})`)
  return { sessions, refreshTokens }
}

// Runs a DELETE limited to `batch` rows until it deletes fewer; the total deleted.
async function deleteInBatches (db: Db, batch: number, statement: RawBuilder<unknown>): Promise<number> {
  let total = 0
  for (;;) {
    const n = Number((await statement.execute(db)).numAffectedRows ?? 0)
    total += n
    if (n < batch) return total
  }
}
