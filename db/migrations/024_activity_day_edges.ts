import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

const NO_QUARTERS = `B'${'0'.repeat(96)}'::bit(96)`
// The first and the last quarter hour (0-95) set in a quarter_mask.
const first = (mask: string) => `(position('1' IN ${mask}::text) - 1)`
const last = (mask: string) => `(96 - position('1' IN reverse(${mask}::text)))`

/**
 * The distinct members of a local date, in any fixed offset, without reading a row per member: per guild,
 * UTC day and quarter hour q (0-95),
 * - first_count: the members whose first event of the day falls in quarter hour q;
 * - last_count: the members whose last event of the day falls in q;
 * - straddle_count: a difference array over the members of both the day before and the day, with b their
 *   first quarter hour of the day and a their last of the day before, b < a: +1 at b + 1, -1 at a + 1.
 *
 * A local date that runs from quarter hour s of UTC day D - 1 to quarter hour s of day D then has
 * sum(last_count of D - 1, q >= s) + sum(first_count of D, q < s) - sum(straddle_count of D, q <= s) members:
 * those with an event in the evening part, plus those with one in the morning part, less those with both
 * (b < s <= a). Kept by every load (db/activity-load.ts) from the changes to activity_daily's quarter_mask;
 * filled here from it.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE activity_day_edges (
    guild_id text COLLATE "C" NOT NULL,
    day date NOT NULL,
    quarter smallint NOT NULL,
    first_count integer NOT NULL DEFAULT 0,
    last_count integer NOT NULL DEFAULT 0,
    straddle_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (guild_id, day, quarter) INCLUDE (first_count, last_count, straddle_count)
  )`.execute(db)
  await sql`
    INSERT INTO activity_day_edges (guild_id, day, quarter, first_count, last_count, straddle_count)
    WITH days AS MATERIALIZED (
      SELECT guild_id, day, user_id, ${sql.raw(first('quarter_mask'))} AS f, ${sql.raw(last('quarter_mask'))} AS l
      FROM activity_daily WHERE quarter_mask <> ${sql.raw(NO_QUARTERS)}
    ),
    pairs AS (
      SELECT c.guild_id, c.day, c.f AS b, p.l AS a FROM days c
      JOIN days p ON p.guild_id = c.guild_id AND p.user_id = c.user_id AND p.day = c.day - 1
      WHERE c.f < p.l
    )
    SELECT guild_id, day, q, sum(f), sum(l), sum(s) FROM (
      SELECT guild_id, day, f AS q, 1 AS f, 0 AS l, 0 AS s FROM days
      UNION ALL SELECT guild_id, day, l, 0, 1, 0 FROM days
      UNION ALL SELECT guild_id, day, b + 1, 0, 0, 1 FROM pairs
      UNION ALL SELECT guild_id, day, a + 1, 0, 0, -1 FROM pairs WHERE a < 95
    ) x
    GROUP BY 1, 2, 3 HAVING sum(f) <> 0 OR sum(l) <> 0 OR sum(s) <> 0`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE activity_day_edges`.execute(db)
}
