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
 * Events per type come from activity_guild_quarters for the window's whole quarter hours. Every zone's
 * offset is a whole number of quarter hours, so a quarter hour lies in one local date; one that would not
 * (a local-mean-time offset of old dates) is read from raw events, like the window's partial quarter hours
 * at its edges.
 *
 * Members of a local date that is 24 hours long, starts on a quarter hour and lies inside the window's
 * whole quarter hours (every date but the first, the last and DST changes) come from activity_day_edges
 * (migration 024): some two hundred rows a date whatever the guild's size. The other dates are read from
 * activity_daily's quarter_mask, a row per member of the UTC days they touch (a member of a UTC day is a
 * member of a local date when their day's quarter hours meet that date's), and from raw events.
 *
 * The two read activity_daily day by day (OFFSET 0 keeps each lateral read apart, an index range per day,
 * rather than merged into one scan of every member day of the guild).
 *
 * The window's members: when it ends after the guild's latest event (a window up to now), the members
 * whose latest event is at or after since (activity_users); otherwise activity_daily's members of its UTC
 * days, their quarter_mask checked on the partial days, and raw events.
 */
export async function overviewDays (db: Db, q: { guildId: string; since: number; until: number; timeZone: string }): Promise<{ days: OverviewDay[]; members: number }> {
  const { from, to, edges } = quarters(q.since, q.until)
  const z = q.timeZone
  const g = q.guildId
  // Quoted: `join` is a keyword.
  const sums = sql.raw(TYPE_COLUMNS.map(([type, column]) => `sum(c.${column}) AS "${type}"`).join(', '))
  const rawCounts = sql.raw(TYPE_COLUMNS.map(([type]) => `count(*) FILTER (WHERE type = '${type}') AS "${type}"`).join(', '))
  const totals = sql.raw(TYPE_COLUMNS.map(([type]) => `coalesce(c."${type}", 0)::int AS "${type}"`).join(', '))
  const regroup = sql.raw(TYPE_COLUMNS.map(([type]) => `sum("${type}") AS "${type}"`).join(', '))
  const quarterOf = (t: string) => sql.raw(`(date_part('hour', ${t} AT TIME ZONE 'UTC')::int * 4 + date_part('minute', ${t} AT TIME ZONE 'UTC')::int / 15)`)
  const { rows } = await withoutJit(db, (trx) => sql<{ date: string; members: number; total_members: number } & TypeCounts>`
    WITH grid AS MATERIALIZED (
      SELECT g.q, (g.q AT TIME ZONE ${z})::date AS local_date, (g.q AT TIME ZONE 'UTC')::date AS day, ${quarterOf('g.q')} AS bit,
        (g.q AT TIME ZONE ${z})::date = ((g.q + interval '15 minutes' - interval '1 microsecond') AT TIME ZONE ${z})::date AS whole
      FROM generate_series(${iso(from)}::timestamptz, ${iso(to)}::timestamptz - interval '15 minutes', interval '15 minutes') AS g(q)
    ),
    dates AS MATERIALIZED (
      SELECT d::date AS local_date, d AT TIME ZONE ${z} AS t0, (d + interval '1 day') AT TIME ZONE ${z} AS t1
      FROM generate_series((${iso(q.since)}::timestamptz AT TIME ZONE ${z})::date::timestamp,
        ((${iso(q.until)}::timestamptz - interval '1 millisecond') AT TIME ZONE ${z})::date::timestamp, interval '1 day') AS d(d)
    ),
    fast AS MATERIALIZED (
      SELECT local_date, (t0 AT TIME ZONE 'UTC')::date AS d0, ${quarterOf('t0')} AS s FROM dates
      WHERE t0 >= ${iso(from)}::timestamptz AND t1 <= ${iso(to)}::timestamptz
        AND extract(epoch FROM t1) - extract(epoch FROM t0) = 86400 AND extract(epoch FROM t0)::bigint % 900 = 0
        AND (t0 AT TIME ZONE ${z})::date = local_date AND ((t0 - interval '1 microsecond') AT TIME ZONE ${z})::date < local_date
        AND ((t1 - interval '1 microsecond') AT TIME ZONE ${z})::date = local_date AND (t1 AT TIME ZONE ${z})::date > local_date
    ),
    masks AS (
      SELECT day, local_date, bit_or(set_bit(${NO_QUARTERS}, bit, 1)) AS mask FROM grid
      WHERE whole AND local_date NOT IN (SELECT local_date FROM fast) GROUP BY 1, 2
    ),
    raw AS MATERIALIZED (
      SELECT e.user_id, e.type, (e.created_at AT TIME ZONE ${z})::date AS local_date
      FROM (${ranges(edges)} UNION ALL SELECT q, q + interval '15 minutes' FROM grid WHERE NOT whole) r
      JOIN activity_events e ON e.guild_id = ${g} AND e.created_at >= r.lo AND e.created_at < r.hi
    ),
    counts AS (
      SELECT (c.quarter AT TIME ZONE ${z})::date AS local_date, ${sums} FROM activity_guild_quarters c
      WHERE c.guild_id = ${g} AND c.quarter >= ${iso(from)}::timestamptz AND c.quarter < ${iso(to)}::timestamptz
        AND (c.quarter AT TIME ZONE ${z})::date = ((c.quarter + interval '15 minutes' - interval '1 microsecond') AT TIME ZONE ${z})::date
      GROUP BY 1
      UNION ALL
      SELECT local_date, ${rawCounts} FROM raw GROUP BY 1
    ),
    slow_members AS (
      SELECT local_date, count(*) AS members FROM (
        SELECT m.local_date, d.user_id FROM masks m
        CROSS JOIN LATERAL (SELECT user_id FROM activity_daily d WHERE d.guild_id = ${g} AND d.day = m.day AND (d.quarter_mask & m.mask) <> ${NO_QUARTERS} OFFSET 0) d
        UNION
        SELECT local_date, user_id FROM raw
      ) u GROUP BY 1
    ),
    fast_members AS (
      SELECT f.local_date,
        coalesce(sum(e.last_count) FILTER (WHERE e.day = f.d0 AND e.quarter >= f.s), 0)
        + coalesce(sum(e.first_count) FILTER (WHERE e.day = f.d0 + 1 AND e.quarter < f.s), 0)
        - coalesce(sum(e.straddle_count) FILTER (WHERE e.day = f.d0 + 1 AND e.quarter <= f.s), 0) AS members
      FROM fast f JOIN activity_day_edges e ON e.guild_id = ${g} AND e.day >= f.d0 AND e.day <= f.d0 + 1
      GROUP BY 1
    ),
    window_days AS (SELECT day, bit_or(set_bit(${NO_QUARTERS}, bit, 1)) AS mask, count(*) = 96 AS is_full FROM grid GROUP BY 1)
    SELECT to_char(d.local_date, 'YYYY-MM-DD') AS date, ${totals}, coalesce(fm.members, sm.members, 0)::int AS members,
      (CASE WHEN (SELECT last_event_at < ${iso(q.until)}::timestamptz FROM activity_guilds WHERE guild_id = ${g})
        THEN (SELECT count(*) FROM activity_users u WHERE u.guild_id = ${g} AND u.last_seen_at >= ${iso(q.since)}::timestamptz)
        ELSE (SELECT count(*) FROM (
          SELECT d.user_id FROM window_days w
          CROSS JOIN LATERAL (SELECT user_id FROM activity_daily d WHERE d.guild_id = ${g} AND d.day = w.day AND (w.is_full OR (d.quarter_mask & w.mask) <> ${NO_QUARTERS}) OFFSET 0) d
          UNION
          SELECT user_id FROM raw) u)
      END)::int AS total_members
    FROM dates d
    LEFT JOIN (SELECT local_date, ${regroup} FROM counts GROUP BY 1) c ON c.local_date = d.local_date
    LEFT JOIN fast_members fm ON fm.local_date = d.local_date
    LEFT JOIN slow_members sm ON sm.local_date = d.local_date
    ORDER BY d.local_date`.execute(trx))
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
