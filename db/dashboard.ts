import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { withLocalSettings } from './analytics.ts'
import type { ActivityType } from '../lib/activity/event.ts'

type Db = Kysely<Database>

const iso = (ms: number) => new Date(ms).toISOString()
const QUARTER = 900_000
// No quarter hour of the day (activity_daily.quarter_mask).
const NO_QUARTERS = sql.raw(`B'${'0'.repeat(96)}'::bit(96)`)

/**
 * Runs fn's queries in a transaction without JIT compilation. The overview's plan is estimated at millions of
 * rows (the planner cannot see how short its ranges of raw events are, nor how many quarter hours a window
 * has) where it reads some ten thousand: JIT would then spend about a second compiling a query that runs in
 * tens of milliseconds.
 */
function withoutJit<T> (db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return withLocalSettings(db, "SET LOCAL jit = off; SET LOCAL work_mem = '32MB'", fn)
}

export interface GuildListEntry { guildId: string; name: string; icon: string | null; owner: boolean; permissions: string }

/** The caller's stored role and guild list (from their latest sign-in); null for an unknown user. */
export async function guildListOf (db: Db, userId: string): Promise<{ role: string; guilds: GuildListEntry[] } | null> {
  const { rows } = await sql<{ role: string; guild_id: string | null; name: string | null; icon: string | null; owner: boolean | null; permissions: string | null }>`
    SELECT u.role, g.guild_id, g.name, g.icon, g.owner, g.permissions FROM users u
    LEFT JOIN user_guilds g ON g.user_id = u.id
    WHERE u.id = ${userId}`.execute(db)
  if (rows.length === 0) return null
  const guilds = rows.filter((r) => r.guild_id !== null)
    .map((r) => ({ guildId: r.guild_id!, name: r.name!, icon: r.icon, owner: r.owner === true, permissions: r.permissions! }))
  return { role: rows[0]!.role, guilds }
}

export interface GuildTotals { guildId: string; members: number; events: number; lastEventAt: string | null }

/**
 * The all-time totals of the given guilds (those without events: 0 and null), and with `everyGuild` of
 * every guild with a stored event too; by events desc, then guild id byte by byte, at most `limit`.
 */
export async function guildTotals (db: Db, q: { guildIds: string[]; everyGuild: boolean; limit: number }): Promise<GuildTotals[]> {
  const which = q.everyGuild ? sql`` : sql`WHERE guild_id = ANY(${q.guildIds}::text[])`
  const { rows } = await sql<{ guild_id: string; events: string; members: number; last: Date | null }>`
    SELECT guild_id, events, members, last FROM (
      SELECT guild_id, event_count AS events, member_count AS members, last_event_at AS last FROM activity_guilds ${which}
      UNION ALL
      SELECT id COLLATE "C", 0, 0, NULL FROM unnest(${q.guildIds}::text[]) AS id
      WHERE NOT EXISTS (SELECT 1 FROM activity_guilds g WHERE g.guild_id = id)
    ) x
    ORDER BY events DESC, guild_id LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => ({ guildId: r.guild_id, members: r.members, events: Number(r.events), lastEventAt: r.last?.toISOString() ?? null }))
}

export type TypeCounts = Record<ActivityType, number>
export interface OverviewDay extends TypeCounts { date: string; events: number; members: number }

// The rollups' columns of each type's count, in the order of ACTIVITY_TYPES.
const TYPE_COLUMNS: [ActivityType, string][] = [['message', 'message_count'], ['typing', 'typing_count'], ['message_delete', 'delete_count'],
  ['reaction', 'reaction_count'], ['presence', 'presence_count'], ['role_change', 'role_change_count'], ['join', 'join_count'], ['leave', 'leave_count']]

/**
 * A window cut at quarter hours: the whole quarter hours inside it, read from the rollups, and the
 * partial ones at its edges, read from raw events (nothing whole: the window itself).
 */
function quarters (since: number, until: number): { from: number; to: number; edges: [number, number][] } {
  const from = Math.ceil(since / QUARTER) * QUARTER
  const to = Math.floor(until / QUARTER) * QUARTER
  if (from >= to) return { from, to: from, edges: [[since, until]] }
  return { from, to, edges: ([[since, from], [to, until]] as [number, number][]).filter(([a, b]) => a < b) }
}

// A list of [lo, hi) ranges as a relation r(lo, hi), to join raw events by the guild and time index.
const ranges = (edges: [number, number][]) =>
  sql`SELECT lo, hi FROM unnest(${edges.map(([a]) => iso(a))}::timestamptz[], ${edges.map(([, b]) => iso(b))}::timestamptz[]) AS r(lo, hi)`

/**
 * Every local date of the window [since, until) in the time zone, from since's date to the date of the
 * last instant before until, with the events of each type and the distinct members whose events fall
 * on it (0 for a date without events); and the window's distinct members.
 *
 * Whole quarter hours come from the rollups: the events of each type from activity_guild_quarters, the
 * members from activity_daily's quarter_mask (a member of a UTC day is a member of a local date when
 * their day's quarter hours meet that date's). Every zone's offset is a whole number of quarter hours, so
 * a quarter hour lies in one local date; one that would not (a local-mean-time offset of old dates) is
 * read from raw events, like the window's partial quarter hours at its edges.
 */
export async function overviewDays (db: Db, q: { guildId: string; since: number; until: number; timeZone: string }): Promise<{ days: OverviewDay[]; members: number }> {
  const { from, to, edges } = quarters(q.since, q.until)
  const z = q.timeZone
  // Quoted: `join` is a keyword.
  const sums = sql.raw(TYPE_COLUMNS.map(([type, column]) => `sum(c.${column}) AS "${type}"`).join(', '))
  const rawCounts = sql.raw(TYPE_COLUMNS.map(([type]) => `count(*) FILTER (WHERE type = '${type}') AS "${type}"`).join(', '))
  const totals = sql.raw(TYPE_COLUMNS.map(([type]) => `coalesce(c."${type}", 0)::int AS "${type}"`).join(', '))
  const regroup = sql.raw(TYPE_COLUMNS.map(([type]) => `sum("${type}") AS "${type}"`).join(', '))
  const { rows } = await withoutJit(db, (trx) => sql<{ date: string; members: number; total_members: number } & TypeCounts>`
    WITH grid AS MATERIALIZED (
      SELECT g.q, (g.q AT TIME ZONE ${z})::date AS local_date, (g.q AT TIME ZONE 'UTC')::date AS day,
        date_part('hour', g.q AT TIME ZONE 'UTC')::int * 4 + date_part('minute', g.q AT TIME ZONE 'UTC')::int / 15 AS bit,
        (g.q AT TIME ZONE ${z})::date = ((g.q + interval '15 minutes' - interval '1 microsecond') AT TIME ZONE ${z})::date AS whole
      FROM generate_series(${iso(from)}::timestamptz, ${iso(to)}::timestamptz - interval '15 minutes', interval '15 minutes') AS g(q)
    ),
    masks AS (SELECT day, local_date, bit_or(set_bit(${NO_QUARTERS}, bit, 1)) AS mask FROM grid WHERE whole GROUP BY 1, 2),
    raw AS MATERIALIZED (
      SELECT e.user_id, e.type, (e.created_at AT TIME ZONE ${z})::date AS local_date
      FROM (${ranges(edges)} UNION ALL SELECT q, q + interval '15 minutes' FROM grid WHERE NOT whole) r
      JOIN activity_events e ON e.guild_id = ${q.guildId} AND e.created_at >= r.lo AND e.created_at < r.hi
    ),
    counts AS (
      SELECT g.local_date, ${sums} FROM grid g
      JOIN activity_guild_quarters c ON c.guild_id = ${q.guildId} AND c.quarter = g.q
      WHERE g.whole AND c.quarter >= ${iso(from)}::timestamptz AND c.quarter < ${iso(to)}::timestamptz
      GROUP BY 1
      UNION ALL
      SELECT local_date, ${rawCounts} FROM raw GROUP BY 1
    ),
    members AS MATERIALIZED (
      SELECT m.local_date, d.user_id FROM masks m
      JOIN activity_daily d ON d.guild_id = ${q.guildId} AND d.day = m.day
      WHERE d.day >= ${iso(from).slice(0, 10)}::date AND d.day <= ${iso(Math.max(from, to - QUARTER)).slice(0, 10)}::date
        AND (d.quarter_mask & m.mask) <> ${NO_QUARTERS}
      UNION
      SELECT local_date, user_id FROM raw
    )
    SELECT to_char(d.d, 'YYYY-MM-DD') AS date, ${totals}, coalesce(mm.members, 0)::int AS members,
      (SELECT count(*) FROM (SELECT DISTINCT user_id FROM members) u)::int AS total_members
    FROM generate_series((${iso(q.since)}::timestamptz AT TIME ZONE ${z})::date,
      ((${iso(q.until)}::timestamptz - interval '1 millisecond') AT TIME ZONE ${z})::date, interval '1 day') AS d(d)
    LEFT JOIN (SELECT local_date, ${regroup} FROM counts GROUP BY 1) c ON c.local_date = d.d::date
    LEFT JOIN (SELECT local_date, count(*) AS members FROM members GROUP BY 1) mm ON mm.local_date = d.d::date
    ORDER BY d.d`.execute(trx))
  const days = rows.map((r) => {
    const day = { date: r.date, events: 0, members: r.members } as OverviewDay
    for (const [type] of TYPE_COLUMNS) {
      day[type] = r[type]
      day.events += r[type]
    }
    return day
  })
  return { days, members: rows[0]?.total_members ?? 0 }
}

export interface ChannelActivity { channelId: string; messages: number; typing: number; reactions: number }

/** The `limit` channels with most message, typing and reaction events in the window, by that sum desc, then channel id. */
export async function overviewChannels (db: Db, q: { guildId: string; since: number; until: number; limit: number }): Promise<ChannelActivity[]> {
  const { from, to, edges } = quarters(q.since, q.until)
  const pieces = []
  if (from < to) {
    pieces.push(sql`SELECT channel_id, message_count AS m, typing_count AS t, reaction_count AS r FROM activity_channel_quarters
      WHERE guild_id = ${q.guildId} AND quarter >= ${iso(from)}::timestamptz AND quarter < ${iso(to)}::timestamptz`)
  }
  if (edges.length > 0) {
    pieces.push(sql`SELECT e.channel_id, (e.type = 'message')::int AS m, (e.type = 'typing')::int AS t, (e.type = 'reaction')::int AS r
      FROM (${ranges(edges)}) r JOIN activity_events e ON e.guild_id = ${q.guildId} AND e.created_at >= r.lo AND e.created_at < r.hi
      WHERE e.type IN ('message', 'typing', 'reaction')`)
  }
  const { rows } = await sql<{ channel_id: string; m: number; t: number; r: number }>`
    SELECT channel_id, sum(m)::int AS m, sum(t)::int AS t, sum(r)::int AS r FROM (${sql.join(pieces, sql` UNION ALL `)}) x
    GROUP BY channel_id HAVING sum(m) + sum(t) + sum(r) > 0
    ORDER BY sum(m) + sum(t) + sum(r) DESC, channel_id LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => ({ channelId: r.channel_id, messages: r.m, typing: r.t, reactions: r.r }))
}
