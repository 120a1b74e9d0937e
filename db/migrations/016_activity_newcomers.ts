import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The members' primary key carries each member's first event ever, so that the suspicion score's
 * newcomers of a window (the members whose first event is at or after its since) are read from the
 * guild's range of the key by an index-only scan instead of from the member rows. Still one index: a
 * load writes no more index entries than before (another index would take one more entry for each
 * member a load updates).
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE activity_users DROP CONSTRAINT activity_users_pkey`.execute(db)
  await sql`ALTER TABLE activity_users ADD PRIMARY KEY (guild_id, user_id) INCLUDE (first_seen_at)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE activity_users DROP CONSTRAINT activity_users_pkey`.execute(db)
  await sql`ALTER TABLE activity_users ADD PRIMARY KEY (guild_id, user_id)`.execute(db)
}
