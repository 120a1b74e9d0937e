import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { MAX_INSTANT } from '../lib/activity/instant.ts'

type Db = Kysely<Database>

// Permission bits of the identity provider's guild list (a decimal bit-set string per guild).
export const ADMINISTRATOR = 0x8n
export const MANAGE_GUILD = 0x20n

export interface Ghost {
  userId: string
  username: string
  typingCount: number
  messageCount: number
  ghostScore: number
}

export interface GhostQuery {
  guildId: string
  // Only events at or after this instant; null or absent: all events.
  since?: Date | null
  limit: number
}

/**
 * Whether the caller may read guild analytics: role ADMIN, or per the guild list stored at sign-in
 * the guild's owner or a holder of ADMINISTRATOR or MANAGE_GUILD. No row for the guild: no.
 */
/**
 * Whether the user may read the guild's analytics, from the stored role and guild list as they are
 * now (one lookup): a role taken away by `user:role` applies to the next request on every instance.
 */
export async function canReadGuild (db: Db, who: { userId: string; guildId: string }): Promise<boolean> {
  const row = await db.selectFrom('users')
    .leftJoin('user_guilds', (j) => j.onRef('user_guilds.user_id', '=', 'users.id').on('user_guilds.guild_id', '=', who.guildId))
    .select(['users.role', 'user_guilds.owner', 'user_guilds.permissions'])
    .where('users.id', '=', who.userId).executeTakeFirst()
  if (!row) return false
  return guildRuleAllows(row.role, row.permissions === null ? null : { owner: row.owner === true, permissions: row.permissions })
}

/** The guild rule on a caller's stored role and their guild list's entry for the guild (null: not in the list). */
export function guildRuleAllows (role: string, entry: { owner: boolean; permissions: string } | null): boolean {
  if (role === 'ADMIN') return true
  if (entry === null) return false
  return entry.owner || (permissionBits(entry.permissions) & (ADMINISTRATOR | MANAGE_GUILD)) !== 0n
}

// A malformed stored bit set grants nothing rather than failing the request.
function permissionBits (permissions: string): bigint {
  if (!/^\d+$/.test(permissions)) return 0n
  return BigInt(permissions)
}

const DAY_MS = 86_400_000

// An instant as text PostgreSQL reads: ISO 8601, or 'infinity' past the last instant a year of four digits holds.
const isoOrInfinity = (ms: number): string => (ms > MAX_INSTANT ? 'infinity' : new Date(ms).toISOString())

/**
 * The guild's ghosts: users with typing events, ghostScore = typingCount / (messageCount + 1), ordered
 * by score desc, typingCount desc, userId (byte order).
 *
 * Without `since` it reads the per-member totals through the ranking index (only `limit` entries).
 * With `since`, whole UTC days after since's day come from the daily rollup and only the rest of
 * since's own day from raw events (none when since is a midnight), so the answer is exact while
 * reading at most one day of raw rows.
 *
 * The order uses the score as a double: a correctly rounded division of integers, so equal ratios
 * are equal doubles and, for counts below 2^26, different ratios are different doubles.
 */
export async function ghostsForGuild (db: Db, q: GhostQuery): Promise<Ghost[]> {
  type Row = { user_id: string; username: string; t: number | string; m: number | string }
  let rows: Row[]
  if (!q.since) {
    rows = (await sql<Row>`
      SELECT user_id, username, typing_count AS t, message_count AS m FROM activity_users
      WHERE guild_id = ${q.guildId} AND typing_count > 0
      ORDER BY typing_count::float8 / (message_count + 1) DESC, typing_count DESC, user_id
      LIMIT ${q.limit}`.execute(db)).rows
  } else {
    const since = q.since.getTime()
    const dayStart = since - (((since % DAY_MS) + DAY_MS) % DAY_MS)
    const partial = since !== dayStart
    // The first day read whole from the rollup: since's own day when since is its midnight. A day
    // after 9999-12-31 (the last since accepted) is PostgreSQL's 'infinity'.
    const nextDay = isoOrInfinity(dayStart + DAY_MS)
    const firstWholeDay = (partial ? nextDay : isoOrInfinity(dayStart)).slice(0, 10)
    // int4 like the rollup's counts, so that the sums stay int8 rather than numeric.
    const rawPart = partial
      ? sql`
        UNION ALL
        SELECT user_id, (count(*) FILTER (WHERE type = 'typing'))::int4, (count(*) FILTER (WHERE type = 'message'))::int4
        FROM activity_events
        WHERE guild_id = ${q.guildId} AND created_at >= ${new Date(since).toISOString()}::timestamptz
          AND created_at < ${nextDay}::timestamptz
        GROUP BY user_id`
      : sql``
    // Ranked and cut to `limit` first, so usernames are looked up for the answer's rows only.
    rows = (await sql<Row>`
      WITH top AS (
        SELECT user_id, sum(t) AS t, sum(m) AS m FROM (
          SELECT user_id, typing_count AS t, message_count AS m FROM activity_daily
          WHERE guild_id = ${q.guildId} AND day >= ${firstWholeDay}::date
          ${rawPart}
        ) parts
        GROUP BY user_id HAVING sum(t) > 0
        ORDER BY sum(t)::float8 / (sum(m) + 1) DESC, sum(t) DESC, user_id
        LIMIT ${q.limit}
      )
      SELECT top.user_id, u.username, top.t, top.m FROM top
      JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = top.user_id
      ORDER BY top.t::float8 / (top.m + 1) DESC, top.t DESC, top.user_id`.execute(db)).rows
  }
  return rows.map((r) => {
    const typingCount = Number(r.t)
    const messageCount = Number(r.m)
    return { userId: r.user_id, username: r.username, typingCount, messageCount, ghostScore: typingCount / (messageCount + 1) }
  })
}

/** How many activity events are stored. */
export async function activityEventCount (db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM activity_events`.execute(db)
  return rows[0]!.n
}
