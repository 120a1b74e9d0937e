import { sql, type Kysely } from 'kysely'
import type { Database } from './types.ts'
import type { Role } from '../lib/auth/types.ts'

type Db = Kysely<Database>

export const ADMINISTRATOR = 0x8n
export const MANAGE_GUILD = 0x20n

export interface Ghost { userId: string; username: string; typingCount: number; messageCount: number; ghostScore: number }

/** Guild-scoped read permission: role ADMIN, or owner, ADMINISTRATOR or MANAGE_GUILD per the guild list stored at sign-in. */
export async function canReadGuild(db: Db, who: { userId: string; role: Role }, guildId: string): Promise<boolean> {
  if (who.role === 'ADMIN') return true
  const row = await db.selectFrom('user_guilds').select(['owner', 'permissions'])
    .where('user_id', '=', who.userId).where('guild_id', '=', guildId).executeTakeFirst()
  if (!row) return false
  if (row.owner) return true
  let bits: bigint
  try {
    bits = BigInt(row.permissions)
  } catch {
    return false
  }
  return (bits & (ADMINISTRATOR | MANAGE_GUILD)) !== 0n
}

/**
 * Users who type more than they post. Without `since` the per-user totals answer alone; with it,
 * whole days after since's UTC day come from the daily rollup and only that first partial day from
 * raw events, so the answer is exact while reading at most one day of raw rows.
 */
export async function ghostsForGuild(db: Db, q: { guildId: string; since: Date | null; limit: number }): Promise<Ghost[]> {
  // Ordered by the ratio (a correctly rounded division: equal ratios of counts give equal doubles),
  // then typing count, then user id.
  const { rows } = q.since === null
    ? await sql<{ user_id: string; username: string | null; t: string | number; m: string | number }>`
      SELECT user_id, username, typing_count AS t, message_count AS m FROM activity_totals
      WHERE guild_id = ${q.guildId} AND typing_count > 0
      ORDER BY typing_count::float8 / (message_count + 1) DESC, typing_count DESC, user_id COLLATE "C"
      LIMIT ${q.limit}`.execute(db)
    : await sql<{ user_id: string; username: string | null; t: string | number; m: string | number }>`
      WITH c AS (
        SELECT user_id, sum(t) AS t, sum(m) AS m FROM (
          SELECT user_id, typing_count AS t, message_count AS m FROM activity_daily
          WHERE guild_id = ${q.guildId} AND day > (${q.since}::timestamptz AT TIME ZONE 'UTC')::date
          UNION ALL
          SELECT user_id, count(*) FILTER (WHERE type = 'typing'), count(*) FILTER (WHERE type = 'message') FROM activity_events
          WHERE guild_id = ${q.guildId} AND created_at >= ${q.since}
            AND created_at < ((${q.since}::timestamptz AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC'
          GROUP BY user_id
        ) parts GROUP BY user_id HAVING sum(t) > 0
      )
      SELECT c.user_id, u.username, c.t, c.m FROM c
      LEFT JOIN activity_totals u ON u.guild_id = ${q.guildId} AND u.user_id = c.user_id
      ORDER BY c.t::float8 / (c.m + 1) DESC, c.t DESC, c.user_id COLLATE "C"
      LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => {
    const t = Number(r.t)
    const m = Number(r.m)
    return { userId: r.user_id, username: r.username ?? r.user_id, typingCount: t, messageCount: m, ghostScore: t / (m + 1) }
  })
}
