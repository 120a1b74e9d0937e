import { sql, type Kysely } from 'kysely'

/**
 * A guild's members by their first event ever: the suspicion score's newcomers of a window (the members
 * whose first event is at or after its since) are an index-only range instead of a pass over every
 * member of the guild.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX activity_users_first_seen_idx ON activity_users (guild_id, first_seen_at) INCLUDE (user_id)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS activity_users_first_seen_idx`.execute(db)
}
