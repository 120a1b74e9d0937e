import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The daily rollup's primary key carries every count the analytics routes read (not only the typing
 * and message counts ghosts reads), so that lurkers, roles, clients, shifts and suspicion read a
 * window's whole days by an index-only scan: a large guild's 30 days are some ten thousand index
 * pages in day order instead of as many heap pages scattered across the table. Still one index: the
 * loads and the ingestion maintain no more than before.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`
    ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id)
      INCLUDE (typing_count, message_count, event_count, presence_count, multi_presence_count, reaction_count, timed_reaction_count,
        fast_reaction_count, delete_count, role_added_count, role_removed_count, client_mask, last_presence_at)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id) INCLUDE (typing_count, message_count)`.execute(db)
}
