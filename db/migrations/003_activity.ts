import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE activity_events (
      guild_id text NOT NULL,
      channel_id text NOT NULL,
      user_id text NOT NULL,
      username text NOT NULL,
      type text NOT NULL CHECK (type IN ('typing', 'message')),
      created_at timestamptz NOT NULL
    )`.execute(db)
  // Only the partial first day of a `since` query reads raw events, by guild and time.
  await sql`CREATE INDEX activity_events_guild_time_idx ON activity_events (guild_id, created_at)`.execute(db)
  await sql`
    CREATE TABLE activity_daily (
      guild_id text NOT NULL,
      user_id text NOT NULL,
      day date NOT NULL,
      typing_count bigint NOT NULL DEFAULT 0,
      message_count bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (guild_id, day, user_id)
    )`.execute(db)
  await sql`
    CREATE TABLE activity_totals (
      guild_id text NOT NULL,
      user_id text NOT NULL,
      typing_count bigint NOT NULL DEFAULT 0,
      message_count bigint NOT NULL DEFAULT 0,
      username text NOT NULL,
      last_seen_at timestamptz NOT NULL,
      PRIMARY KEY (guild_id, user_id)
    )`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  for (const table of ['activity_totals', 'activity_daily', 'activity_events']) {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db)
  }
}
