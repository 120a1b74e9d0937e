import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * Reshapes the activity tables for the ghosts queries:
 * - ids compare byte-wise (COLLATE "C"): they are opaque strings, and sorts and index comparisons
 *   run at memcmp speed;
 * - the daily rollup's counts are int4 and carried in its primary key, so a "days after since" range
 *   is read by an index-only scan;
 * - the per-member totals become activity_users, with the all-time ranking in ghost order as an
 *   index, so a query without `since` reads only `limit` index entries.
 * Existing rows are kept.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE activity_events
      ALTER COLUMN guild_id TYPE text COLLATE "C",
      ALTER COLUMN channel_id TYPE text COLLATE "C",
      ALTER COLUMN user_id TYPE text COLLATE "C"`.execute(db)
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`
    ALTER TABLE activity_daily
      ALTER COLUMN guild_id TYPE text COLLATE "C",
      ALTER COLUMN user_id TYPE text COLLATE "C",
      ALTER COLUMN typing_count TYPE integer,
      ALTER COLUMN message_count TYPE integer`.execute(db)
  await sql`ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id) INCLUDE (typing_count, message_count)`.execute(db)
  await sql`ALTER TABLE activity_totals RENAME TO activity_users`.execute(db)
  await sql`ALTER TABLE activity_users DROP CONSTRAINT activity_totals_pkey`.execute(db)
  await sql`
    ALTER TABLE activity_users
      ALTER COLUMN guild_id TYPE text COLLATE "C",
      ALTER COLUMN user_id TYPE text COLLATE "C"`.execute(db)
  await sql`ALTER TABLE activity_users ADD PRIMARY KEY (guild_id, user_id)`.execute(db)
  await sql`
    CREATE INDEX activity_users_ghost_rank_idx ON activity_users
      (guild_id, (typing_count::float8 / (message_count + 1)) DESC, typing_count DESC, user_id)
      WHERE typing_count > 0`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX activity_users_ghost_rank_idx`.execute(db)
  await sql`ALTER TABLE activity_users DROP CONSTRAINT activity_users_pkey`.execute(db)
  await sql`
    ALTER TABLE activity_users
      ALTER COLUMN guild_id TYPE text COLLATE "default",
      ALTER COLUMN user_id TYPE text COLLATE "default"`.execute(db)
  await sql`ALTER TABLE activity_users RENAME TO activity_totals`.execute(db)
  await sql`ALTER TABLE activity_totals ADD PRIMARY KEY (guild_id, user_id)`.execute(db)
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`
    ALTER TABLE activity_daily
      ALTER COLUMN guild_id TYPE text COLLATE "default",
      ALTER COLUMN user_id TYPE text COLLATE "default",
      ALTER COLUMN typing_count TYPE bigint,
      ALTER COLUMN message_count TYPE bigint`.execute(db)
  await sql`ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id)`.execute(db)
  await sql`
    ALTER TABLE activity_events
      ALTER COLUMN guild_id TYPE text COLLATE "default",
      ALTER COLUMN channel_id TYPE text COLLATE "default",
      ALTER COLUMN user_id TYPE text COLLATE "default"`.execute(db)
}
