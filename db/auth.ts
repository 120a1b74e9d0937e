import { randomUUID } from 'node:crypto'
import type { Kysely, RawBuilder, Selectable } from 'kysely'
import { sql } from './kysely.ts'
import type { Database, UserTable } from './types.ts'
import type { IdpGuild, IdpUser } from '../lib/auth/idp-client.ts'
import type { Role } from '../lib/auth/types.ts'
import { inTransaction } from './transaction.ts'

type Db = Kysely<Database>
export type UserRow = Selectable<UserTable>

// Lock order. Every transaction that writes users, sessions or refresh tokens takes its row locks in one
// order: the user, then the user's sessions, then their refresh tokens (the security history is only
// ever inserted into, with no foreign key). Where a transaction starts from a session or a token, it
// reads where that leads without a lock first. A deadlock can then only come from outside this order,
// and inTransaction runs its victim again (docs/architecture.md, "Lock order").

// The user's row, held against deletion (a deletion waits; a role change or a sign-in's update does not).
const holdUser = (trx: Db, userId: string) =>
  trx.selectFrom('users').selectAll().where('id', '=', userId).forKeyShare().executeTakeFirst()

/** Upserts the user by provider id and replaces the stored guild list, in one transaction. */
export async function saveSignIn (db: Db, user: IdpUser, guilds: IdpGuild[]): Promise<UserRow> {
  return inTransaction(db, async (trx) => {
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
  await inTransaction(db, async (trx) => {
    await trx.insertInto('sessions').values({ id, user_id: s.userId, expires_at: end, user_agent: s.userAgent, ip: s.ip }).execute()
    await trx.insertInto('refresh_tokens').values({ token_hash: s.tokenHash, session_id: id, expires_at: end }).execute()
    // newIp: the first sign-in of this user from this address (within the audit's retention).
    const seen = await trx.selectFrom('audit').select('id').where('user_id', '=', s.userId).where('type', '=', 'signin')
      .where(sql<string>`data->>'ip'`, '=', s.ip ?? '').limit(1).executeTakeFirst()
    await audit(trx, 'signin', s.userId, { ip: s.ip, userAgent: s.userAgent, newIp: !seen, sessionId: id })
  })
  return id
}

/** Who ended a session, as the security history says it. */
export type RevokedBy = 'self' | 'admin' | 'reuse' | 'signout_all'

// One row of the security history, in the transaction of what it records.
async function audit (trx: Db, type: string, userId: string | null, data: Record<string, unknown>, actorId: string | null = null): Promise<void> {
  await trx.insertInto('audit').values({ type, user_id: userId, actor_id: actorId, data: JSON.stringify(data) }).execute()
}

export type RotateResult =
  | { kind: 'ok'; sessionId: string; user: UserRow; replay: boolean }
  | { kind: 'reused'; sessionId: string }
  | { kind: 'invalid' }

/**
 * Spends a refresh token and records its successor (`next`, whose id the caller derives from the old
 * token's, so that every presentation of one token names the same successor), atomically: of two
 * requests with the same token only one spends it. Presented again within the grace window of its
 * rotation (a second tab refreshing at the same moment), it is answered with that same successor and
 * recorded as a `refresh_replay`: the chain never forks. Presented after the window, it was copied: the
 * caller revokes the session.
 */
export async function rotateRefreshToken (db: Db, oldHash: string, next: { tokenHash: string; expiresAt: Date }, maxAgeMs: number, graceMs = 0): Promise<RotateResult> {
  return inTransaction(db, async (trx) => {
    const leads = await trx.selectFrom('refresh_tokens').innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .select(['refresh_tokens.session_id', 'sessions.user_id']).where('token_hash', '=', oldHash).executeTakeFirst()
    if (!leads) return { kind: 'invalid' }
    const user = await holdUser(trx, leads.user_id)
    if (!user) return { kind: 'invalid' }
    // A session past its absolute lifetime (SESSION_MAX_AGE from its sign-in) is not renewed.
    const session = await trx.selectFrom('sessions')
      .select(['id', 'created_at', sql<boolean>`revoked_at IS NULL AND expires_at > now() AND created_at > now() - make_interval(secs => ${maxAgeMs / 1000})`.as('live')])
      .where('id', '=', leads.session_id).forNoKeyUpdate().executeTakeFirst()
    const token = await trx.selectFrom('refresh_tokens')
      .select(['rotated_at', sql<boolean>`expires_at > now()`.as('unexpired'), sql<boolean>`rotated_at > now() - make_interval(secs => ${graceMs / 1000})`.as('in_grace')])
      .where('token_hash', '=', oldHash).forUpdate().executeTakeFirst()
    if (!session || !token) return { kind: 'invalid' }
    const replay = token.rotated_at !== null
    if (replay && !token.in_grace) return { kind: 'reused', sessionId: session.id }
    if ((!replay && !token.unexpired) || !session.live) return { kind: 'invalid' }
    const end = sessionEnd(next.expiresAt, session.created_at.getTime(), maxAgeMs)
    if (replay) {
      await audit(trx, 'refresh_replay', user.id, { sessionId: session.id })
    } else {
      await trx.updateTable('refresh_tokens').set({ rotated_at: sql`now()` }).where('token_hash', '=', oldHash).execute()
    }
    // A replay finds the successor its token's rotation stored (and, if that one moved on since, is handed
    // it all the same: presenting it again is reuse, or a replay of its own within its window).
    await trx.insertInto('refresh_tokens').values({ token_hash: next.tokenHash, session_id: session.id, expires_at: end })
      .onConflict((oc) => oc.column('token_hash').doNothing()).execute()
    await trx.updateTable('sessions').set({ last_used_at: sql`now()`, expires_at: end }).where('id', '=', session.id).execute()
    return { kind: 'ok', sessionId: session.id, user, replay }
  })
}

/**
 * Revokes a live session and records who did it (`by`, and the admin's id for `admin`); with userId,
 * only a session of that user's. Returns whether a live session was revoked.
 */
export async function revokeSession (db: Db, sessionId: string, reason: string, who: { by: RevokedBy; userId?: string; actorId?: string }): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const owner = await trx.selectFrom('sessions').select('user_id').where('id', '=', sessionId).executeTakeFirst()
    if (!owner || !await holdUser(trx, owner.user_id)) return false
    let q = trx.updateTable('sessions').set({ revoked_at: sql`now()`, revoked_reason: reason })
      .where('id', '=', sessionId).where('revoked_at', 'is', null)
    if (who.userId) q = q.where('user_id', '=', who.userId)
    const row = await q.returning('user_id').executeTakeFirst()
    if (!row) return false
    if (who.by === 'reuse') await audit(trx, 'refresh_reuse', row.user_id, { sessionId })
    await audit(trx, 'session_revoked', row.user_id, { by: who.by, sessionId }, who.actorId ?? null)
    return true
  })
}

/**
 * Ends every live session of the user (but `except`, the caller's own, for "everywhere else"), in one
 * transaction with its history: one `signout_all` row (by the user, or by an admin) and a
 * `session_revoked` row per session. Returns the revoked sessions' ids.
 */
export async function revokeAllSessions (db: Db, userId: string, options: { except?: string; actorId?: string } = {}): Promise<string[]> {
  return inTransaction(db, async (trx) => {
    await holdUser(trx, userId)
    let q = trx.updateTable('sessions').set({ revoked_at: sql`now()`, revoked_reason: options.actorId ? 'signed out by an admin' : 'signed out everywhere' })
      .where('user_id', '=', userId).where('revoked_at', 'is', null)
    if (options.except) q = q.where('id', '!=', options.except)
    const ids = (await q.returning('id').execute()).map((r) => r.id)
    const by: RevokedBy = options.actorId ? 'admin' : 'signout_all'
    await audit(trx, 'signout_all', userId, { scope: options.except ? 'others' : 'all', sessions: ids.length, ...(options.actorId ? { by } : {}) }, options.actorId ?? null)
    for (const id of ids) await audit(trx, 'session_revoked', userId, { by, sessionId: id }, options.actorId ?? null)
    return ids
  })
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

export class LastAdmin extends Error {
  override name = 'LastAdmin'
}

/**
 * Sets a user's role (by provider id, or by id with `{ id }`) and records it as `role_changed`
 * (`from`, `to`, `by`: `admin`, `cli`). An admin may not demote the last ADMIN (LastAdmin). Returns the
 * user's id, or undefined when no such user exists.
 */
export async function setRole (db: Db, who: string | { id: string }, role: Role, by: { by: 'admin' | 'cli'; actorId?: string } = { by: 'cli' }): Promise<string | undefined> {
  return inTransaction(db, async (trx) => {
    const match = typeof who === 'string' ? ['provider_id', who] as const : ['id', who.id] as const
    // An admin's demotion locks the target with every ADMIN, in id order, in one statement: two admins
    // demoting each other at once are serialized, and the second sees that it would leave no ADMIN.
    const guarded = by.by === 'admin' && role !== 'ADMIN'
    const locked = await trx.selectFrom('users').select(['id', 'role', match[0]])
      .where((eb) => guarded ? eb.or([eb(match[0], '=', match[1]), eb('role', '=', 'ADMIN')]) : eb(match[0], '=', match[1]))
      .orderBy('id').forNoKeyUpdate().execute()
    const before = locked.find((u) => u[match[0]] === match[1])
    if (!before) return undefined
    if (guarded && before.role === 'ADMIN' && locked.filter((u) => u.role === 'ADMIN').length <= 1) {
      throw new LastAdmin('The last ADMIN cannot be demoted')
    }
    await trx.updateTable('users').set({ role, updated_at: sql`now()` }).where('id', '=', before.id).execute()
    if (before.role !== role) await audit(trx, 'role_changed', before.id, { from: before.role, to: role, by: by.by }, by.actorId ?? null)
    return before.id
  })
}

export interface AuditRow { id: string; at: Date; type: string; user_id: string | null; actor_id: string | null; data: Record<string, unknown> }

/** Security events, newest first: of one user, of a type, since an instant, before a row id (the cursor). */
export async function auditEvents (db: Db, q: { userId?: string; type?: string; since?: Date; before?: string; limit: number }): Promise<AuditRow[]> {
  let query = db.selectFrom('audit').select(['id', 'at', 'type', 'user_id', 'actor_id', 'data'])
  if (q.userId) query = query.where('user_id', '=', q.userId)
  if (q.type) query = query.where('type', '=', q.type)
  if (q.since) query = query.where('at', '>=', q.since)
  if (q.before) query = query.where('id', '<', q.before)
  return query.orderBy('id', 'desc').limit(q.limit).execute() as Promise<AuditRow[]>
}

/** Deletes security events older than retentionMs, in batches; the number deleted. */
export async function pruneAudit (db: Db, retentionMs: number, batch = 5000): Promise<number> {
  const cutoff = sql<Date>`now() - make_interval(secs => ${retentionMs / 1000})`
  return deleteInBatches(db, batch, sql`DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ${cutoff} LIMIT ${batch})`)
}

/** Everything stored about a user: profile, guild list, sessions (no token material) and history. */
export async function accountExport (db: Db, userId: string) {
  const found = await userWithGuilds(db, userId)
  if (!found) return undefined
  const sessions = await db.selectFrom('sessions').select(['id', 'created_at', 'last_used_at', 'expires_at', 'revoked_at', 'revoked_reason', 'user_agent', 'ip'])
    .where('user_id', '=', userId).orderBy('created_at', 'desc').execute()
  const history = await db.selectFrom('audit').select(['id', 'at', 'type', 'user_id', 'actor_id', 'data']).where('user_id', '=', userId).orderBy('id', 'desc').execute() as AuditRow[]
  return { ...found, sessions, history }
}

/**
 * Deletes the account: the user, with its guild list, sessions and refresh-token records (cascades) and
 * its history; one anonymous `account_deleted` row stays. The sessions' deletion reaches every instance
 * on the change bus. Returns the ids of its sessions, or undefined when there was no such user.
 */
export async function deleteAccount (db: Db, userId: string): Promise<string[] | undefined> {
  return inTransaction(db, async (trx) => {
    // The user first, then its sessions: no sign-in or refresh can add one between the list and the deletion.
    const user = await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().executeTakeFirst()
    if (!user) return undefined
    const sessions = await trx.selectFrom('sessions').select('id').where('user_id', '=', userId).forUpdate().execute()
    await trx.deleteFrom('users').where('id', '=', userId).execute()
    await trx.deleteFrom('audit').where('user_id', '=', userId).execute()
    await audit(trx, 'account_deleted', null, {})
    return sessions.map((s) => s.id)
  })
}

/** Users whose username or provider id contains `q` (any case), by username. */
export async function searchUsers (db: Db, q: { q?: string; limit: number; offset: number }) {
  let query = db.selectFrom('users').selectAll()
  if (q.q) {
    const like = `%${q.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    query = query.where((eb) => eb.or([eb('username', 'ilike', like), eb('provider_id', 'ilike', like)]))
  }
  const rows = await query.orderBy('username').orderBy('id').limit(q.limit).offset(q.offset).execute()
  return rows
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
