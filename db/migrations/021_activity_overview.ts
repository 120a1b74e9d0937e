import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

// No quarter hour of the day: 96 bits, quarter hour 0 (00:00-00:15 UTC) leftmost.
const NO_QUARTERS = `B'${'0'.repeat(96)}'::bit(96)`
// The quarter hour of its UTC day an event falls in, as a one-bit set.
const QUARTER_BIT = `set_bit(${NO_QUARTERS}, date_part('hour', created_at AT TIME ZONE 'UTC')::int * 4 + date_part('minute', created_at AT TIME ZONE 'UTC')::int / 15, 1)`

/**
 * Rollups for the guild dashboard, maintained by every load (CLI or API), so that a guild's overview in
 * any time zone and the list of guilds read no raw events beyond a window's partial quarter hours:
 * - activity_guilds: per guild, its events, members and latest event, all time;
 * - activity_guild_quarters: per guild and quarter hour, the events of each type (every time zone's
 *   offset is a whole number of quarter hours, so local dates come out exact);
 * - activity_daily gains `quarter_mask`, the quarter hours of the UTC day in which the member had an
 *   event, in its primary key like the other counts (members per local date: an index-only read);
 * - activity_channel_quarters gains `reaction_count` (a channel's messages, typing and reactions).
 * Filled from the stored events.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE activity_guilds (
    guild_id text COLLATE "C" PRIMARY KEY,
    event_count bigint NOT NULL,
    member_count integer NOT NULL,
    last_event_at timestamptz NOT NULL
  )`.execute(db)
  await sql`
    INSERT INTO activity_guilds (guild_id, event_count, member_count, last_event_at)
    SELECT guild_id, count(*), count(DISTINCT user_id), max(created_at) FROM activity_events GROUP BY 1`.execute(db)

  await sql`CREATE TABLE activity_guild_quarters (
    guild_id text COLLATE "C" NOT NULL,
    quarter timestamptz NOT NULL,
    message_count integer NOT NULL DEFAULT 0,
    typing_count integer NOT NULL DEFAULT 0,
    delete_count integer NOT NULL DEFAULT 0,
    reaction_count integer NOT NULL DEFAULT 0,
    presence_count integer NOT NULL DEFAULT 0,
    role_change_count integer NOT NULL DEFAULT 0,
    join_count integer NOT NULL DEFAULT 0,
    leave_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (guild_id, quarter)
  )`.execute(db)
  await sql`
    INSERT INTO activity_guild_quarters (guild_id, quarter, ${sql.raw(GUILD_QUARTER_COLUMNS.join(', '))})
    SELECT guild_id, date_bin('15 minutes', created_at, '2000-01-01T00:00:00Z'), ${sql.raw(GUILD_QUARTER_AGGREGATES)}
    FROM activity_events GROUP BY 1, 2`.execute(db)

  await sql`ALTER TABLE activity_channel_quarters ADD COLUMN reaction_count integer NOT NULL DEFAULT 0`.execute(db)
  await sql`
    INSERT INTO activity_channel_quarters AS q (guild_id, quarter, channel_id, reaction_count)
    SELECT guild_id, date_bin('15 minutes', created_at, '2000-01-01T00:00:00Z'), channel_id, count(*)
    FROM activity_events WHERE type = 'reaction' GROUP BY 1, 2, 3
    ON CONFLICT (guild_id, quarter, channel_id) DO UPDATE SET reaction_count = EXCLUDED.reaction_count`.execute(db)

  await sql`ALTER TABLE activity_daily ADD COLUMN quarter_mask bit(96) NOT NULL DEFAULT ${sql.raw(NO_QUARTERS)}`.execute(db)
  await sql`
    UPDATE activity_daily d SET quarter_mask = m.mask
    FROM (SELECT guild_id, (created_at AT TIME ZONE 'UTC')::date AS day, user_id, bit_or(${sql.raw(QUARTER_BIT)}) AS mask
      FROM activity_events GROUP BY 1, 2, 3) m
    WHERE d.guild_id = m.guild_id AND d.day = m.day AND d.user_id = m.user_id`.execute(db)
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id) INCLUDE (${sql.raw([...DAILY_INCLUDED, 'quarter_mask'].join(', '))})`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_pkey`.execute(db)
  await sql`ALTER TABLE activity_daily ADD PRIMARY KEY (guild_id, day, user_id) INCLUDE (${sql.raw(DAILY_INCLUDED.join(', '))})`.execute(db)
  await sql`ALTER TABLE activity_daily DROP COLUMN quarter_mask`.execute(db)
  await sql`DELETE FROM activity_channel_quarters WHERE message_count = 0 AND typing_count = 0`.execute(db)
  await sql`ALTER TABLE activity_channel_quarters DROP COLUMN reaction_count`.execute(db)
  await sql`DROP TABLE IF EXISTS activity_guild_quarters, activity_guilds`.execute(db)
}

// The daily rollup's key columns as of migration 013.
const DAILY_INCLUDED = ['typing_count', 'message_count', 'event_count', 'presence_count', 'multi_presence_count', 'reaction_count',
  'timed_reaction_count', 'fast_reaction_count', 'delete_count', 'role_added_count', 'role_removed_count', 'client_mask', 'last_presence_at']

// The guild quarter rollup's counts and their aggregates over activity_events, as of this migration (the loads
// keep their own copy in db/activity-load.ts).
const GUILD_QUARTER_COLUMNS = ['message_count', 'typing_count', 'delete_count', 'reaction_count', 'presence_count', 'role_change_count', 'join_count', 'leave_count']
const GUILD_QUARTER_AGGREGATES = ['message', 'typing', 'message_delete', 'reaction', 'presence', 'role_change', 'join', 'leave']
  .map((type) => `count(*) FILTER (WHERE type = '${type}')`).join(', ')
