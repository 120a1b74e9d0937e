import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * Rollups for the analytics routes, maintained by every load (CLI or API), so that a window reads whole
 * days (or quarter hours) from them and only its partial edges from raw events:
 * - activity_daily (per guild, UTC day, member) gains the counts of every type the routes use, the
 *   latest presence of the day and the day's clients as a bit set (desktop 1, web 2, mobile 4);
 * - activity_users gains `first_presence_at`;
 * - activity_member_clients: a member's first presence listing each client;
 * - activity_channel_quarters: message and typing events per channel and quarter hour (every time zone's
 *   offset is a whole number of quarter hours, so local hours of the week come out exact).
 * Filled from the stored events.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE activity_daily
      ADD COLUMN event_count integer NOT NULL DEFAULT 0,
      ADD COLUMN presence_count integer NOT NULL DEFAULT 0,
      ADD COLUMN multi_presence_count integer NOT NULL DEFAULT 0,
      ADD COLUMN reaction_count integer NOT NULL DEFAULT 0,
      ADD COLUMN timed_reaction_count integer NOT NULL DEFAULT 0,
      ADD COLUMN fast_reaction_count integer NOT NULL DEFAULT 0,
      ADD COLUMN delete_count integer NOT NULL DEFAULT 0,
      ADD COLUMN role_added_count integer NOT NULL DEFAULT 0,
      ADD COLUMN role_removed_count integer NOT NULL DEFAULT 0,
      ADD COLUMN client_mask smallint NOT NULL DEFAULT 0,
      ADD COLUMN last_presence_at timestamptz`.execute(db)
  await sql`ALTER TABLE activity_users ADD COLUMN first_presence_at timestamptz`.execute(db)
  await sql`CREATE TABLE activity_member_clients (
    guild_id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    client text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    PRIMARY KEY (guild_id, user_id, client)
  )`.execute(db)
  await sql`CREATE INDEX activity_member_clients_first_idx ON activity_member_clients (guild_id, first_seen_at)`.execute(db)
  await sql`CREATE TABLE activity_channel_quarters (
    guild_id text COLLATE "C" NOT NULL,
    quarter timestamptz NOT NULL,
    channel_id text COLLATE "C" NOT NULL,
    message_count integer NOT NULL DEFAULT 0,
    typing_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (guild_id, quarter, channel_id)
  )`.execute(db)
  await sql`
    INSERT INTO activity_daily AS d (guild_id, day, user_id, ${sql.raw(DAILY_COLUMNS.join(', '))})
    SELECT guild_id, (created_at AT TIME ZONE 'UTC')::date, user_id, ${sql.raw(DAILY_AGGREGATES)}
    FROM activity_events GROUP BY 1, 2, 3
    ON CONFLICT (guild_id, day, user_id) DO UPDATE SET ${sql.raw(DAILY_COLUMNS.map((c) => `${c} = EXCLUDED.${c}`).join(', '))}`.execute(db)
  await sql`
    UPDATE activity_users u SET first_presence_at = f.first
    FROM (SELECT guild_id, user_id, min(created_at) AS first FROM activity_events WHERE type = 'presence' GROUP BY 1, 2) f
    WHERE f.guild_id = u.guild_id AND f.user_id = u.user_id`.execute(db)
  await sql`
    INSERT INTO activity_member_clients (guild_id, user_id, client, first_seen_at)
    SELECT e.guild_id, e.user_id, c.client, min(e.created_at) FROM activity_events e CROSS JOIN LATERAL unnest(e.clients) AS c(client)
    WHERE e.type = 'presence' GROUP BY 1, 2, 3`.execute(db)
  await sql`
    INSERT INTO activity_channel_quarters (guild_id, quarter, channel_id, message_count, typing_count)
    SELECT guild_id, date_bin('15 minutes', created_at, '2000-01-01T00:00:00Z'), channel_id,
      count(*) FILTER (WHERE type = 'message'), count(*) FILTER (WHERE type = 'typing')
    FROM activity_events WHERE type IN ('message', 'typing') GROUP BY 1, 2, 3`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS activity_channel_quarters, activity_member_clients`.execute(db)
  await sql`ALTER TABLE activity_users DROP COLUMN first_presence_at`.execute(db)
  await sql`
    ALTER TABLE activity_daily
      DROP COLUMN event_count, DROP COLUMN presence_count, DROP COLUMN multi_presence_count, DROP COLUMN reaction_count,
      DROP COLUMN timed_reaction_count, DROP COLUMN fast_reaction_count, DROP COLUMN delete_count, DROP COLUMN role_added_count,
      DROP COLUMN role_removed_count, DROP COLUMN client_mask, DROP COLUMN last_presence_at`.execute(db)
}

// The daily rollup's columns and their aggregates over activity_events, as of this migration (the loads
// keep their own copy in db/activity-load.ts).
const DAILY_COLUMNS = ['typing_count', 'message_count', 'event_count', 'presence_count', 'multi_presence_count', 'reaction_count',
  'timed_reaction_count', 'fast_reaction_count', 'delete_count', 'role_added_count', 'role_removed_count', 'client_mask', 'last_presence_at']
const DAILY_AGGREGATES = [
  "count(*) FILTER (WHERE type = 'typing')",
  "count(*) FILTER (WHERE type = 'message')",
  'count(*)',
  "count(*) FILTER (WHERE type = 'presence')",
  "count(*) FILTER (WHERE type = 'presence' AND cardinality(clients) >= 2)",
  "count(*) FILTER (WHERE type = 'reaction')",
  "count(*) FILTER (WHERE type = 'reaction' AND latency_ms IS NOT NULL)",
  "count(*) FILTER (WHERE type = 'reaction' AND latency_ms < 3000)",
  "count(*) FILTER (WHERE type = 'message_delete')",
  "count(*) FILTER (WHERE type = 'role_change' AND change = 'added')",
  "count(*) FILTER (WHERE type = 'role_change' AND change = 'removed')",
  "coalesce(bit_or((CASE WHEN 'desktop' = ANY(clients) THEN 1 ELSE 0 END | CASE WHEN 'web' = ANY(clients) THEN 2 ELSE 0 END | CASE WHEN 'mobile' = ANY(clients) THEN 4 ELSE 0 END)) FILTER (WHERE type = 'presence'), 0)",
  "max(created_at) FILTER (WHERE type = 'presence')"
].join(', ')
