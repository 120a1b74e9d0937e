import type { Kysely, RawBuilder } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import type { SuspicionCounts } from '../lib/activity/analytics.ts'
import type { Ghost } from './activity.ts'

type Db = Kysely<Database>

/** A window [since, until) in milliseconds; since null: from the beginning of the data. */
export interface WindowQuery { guildId: string; since: number | null; until: number }

const iso = (ms: number) => new Date(ms).toISOString()

// The window's condition on activity_events (aliased e), index-friendly: no OR on a null since.
function inWindow (w: { since: number | null; until: number }): RawBuilder<unknown> {
  return w.since === null
    ? sql`e.created_at < ${iso(w.until)}::timestamptz`
    : sql`e.created_at >= ${iso(w.since)}::timestamptz AND e.created_at < ${iso(w.until)}::timestamptz`
}

const DAY = 86_400_000
const QUARTER = 900_000
// The earliest instant PostgreSQL reads back from toISOString() (0001-01-01): a previous window is cut there.
const MIN_INSTANT = -62135596800000
const day = (ms: number) => iso(ms).slice(0, 10)

/**
 * A window cut for the rollups: the whole units (UTC days or quarter hours) inside it, read from a
 * rollup, and its partial edges, read from raw events.
 */
export function splitWindow (since: number | null, until: number, unit: number): { whole: { from: number | null; to: number } | null; edges: [number, number][] } {
  const floor = (x: number) => x - (((x % unit) + unit) % unit)
  const to = floor(until)
  const from = since === null ? null : floor(since) === since ? since : floor(since) + unit
  if (since !== null && from! >= to) return { whole: null, edges: [[since, until]] }
  const edges: [number, number][] = []
  if (since !== null && since !== from) edges.push([since, from!])
  if (until !== to) edges.push([to, until])
  return { whole: { from, to }, edges }
}

const edgeCondition = (edges: [number, number][]) =>
  sql.join(edges.map(([a, b]) => sql`(e.created_at >= ${iso(a)}::timestamptz AND e.created_at < ${iso(b)}::timestamptz)`), sql` OR `)

/**
 * Per-member rows of a window: the daily rollup's whole UTC days and, grouped by member, the raw events
 * of the partial days at the edges. `columns` names each output column with its expression over the
 * rollup and its aggregate over raw events; `member`, when given, keeps that member's rows only.
 */
function memberParts (guildId: string, w: { since: number | null; until: number }, columns: Record<string, [daily: string, raw: string]>,
  only?: [daily: string, raw: string], member?: string): RawBuilder<unknown> {
  const { whole, edges } = splitWindow(w.since, w.until, DAY)
  const list = (i: 0 | 1) => sql.raw(Object.entries(columns).map(([name, exprs]) => `${exprs[i]} AS ${name}`).join(', '))
  const pieces: RawBuilder<unknown>[] = []
  if (whole) {
    const from = whole.from === null ? sql`` : sql`AND day >= ${day(whole.from)}::date`
    const rows = only ? sql.raw(`AND ${only[0]}`) : sql``
    const one = member === undefined ? sql`` : sql`AND user_id = ${member}`
    pieces.push(sql`SELECT user_id, ${list(0)} FROM activity_daily WHERE guild_id = ${guildId} ${from} AND day < ${day(whole.to)}::date ${rows} ${one}`)
  }
  if (edges.length > 0) {
    const rows = only ? sql.raw(`AND ${only[1]}`) : sql``
    const one = member === undefined ? sql`` : sql`AND e.user_id = ${member}`
    pieces.push(sql`SELECT e.user_id, ${list(1)} FROM activity_events e WHERE e.guild_id = ${guildId} AND (${edgeCondition(edges)}) ${rows} ${one} GROUP BY e.user_id`)
  }
  return sql.join(pieces, sql` UNION ALL `)
}

/**
 * Runs the queries of fn in a transaction without parallel workers and with room to aggregate in memory.
 * The routes that group a large guild's window by member (tens of thousands of members from the daily
 * rollup) are misjudged by the planner, which guesses a few hundred groups: it picks parallel workers (on a
 * small machine they compete with the rest of the work; the answer's p99 doubles) and a sort by member
 * that spills to disk, where one hash aggregate in memory is fastest.
 */
function grouping<T> (db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  return withLocalSettings(db, "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL work_mem = '32MB'", fn)
}

/**
 * Runs fn's queries in a transaction of one connection with `settings` (SET LOCAL statements, constant
 * text) in force: one round trip before the queries (no parameters: the simple protocol runs several
 * statements at once), one after.
 */
export async function withLocalSettings<T> (db: Db, settings: string, fn: (trx: Db) => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`BEGIN; ${sql.raw(settings)}`.execute(conn)
    try {
      const result = await fn(conn)
      await sql`COMMIT`.execute(conn)
      return result
    } catch (err) {
      await sql`ROLLBACK`.execute(conn).catch(() => {})
      throw err
    }
  })
}

export interface Lurker { userId: string; username: string; presenceCount: number; lastPresenceAt: string }

/** Members with at least minPresence presence events in the window and no message, typing or reaction in it. */
export async function lurkers (db: Db, q: WindowQuery & { minPresence: number; limit: number }): Promise<Lurker[]> {
  const parts = memberParts(q.guildId, q, {
    p: ['presence_count', "count(*) FILTER (WHERE type = 'presence')"],
    a: ['typing_count + message_count + reaction_count', "count(*) FILTER (WHERE type IN ('message', 'typing', 'reaction'))"],
    last: ['last_presence_at', "max(created_at) FILTER (WHERE type = 'presence')"]
  })
  const { rows } = await sql<{ user_id: string; username: string; p: number; last: Date }>`
    WITH w AS (
      SELECT user_id, sum(p) AS p, max(last) AS last FROM (${parts}) parts
      GROUP BY user_id HAVING sum(p) >= ${q.minPresence} AND sum(a) = 0
      ORDER BY sum(p) DESC, user_id LIMIT ${q.limit}
    )
    SELECT w.user_id, u.username, w.p::int AS p, w.last FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
    ORDER BY w.p DESC, w.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, presenceCount: r.p, lastPresenceAt: r.last.toISOString() }))
}

export interface HeatCell { channelId: string; dayOfWeek: number; hour: number; messages: number; typing: number }

/**
 * Message and typing events of the window per channel, local day of the week (0 = Monday) and local
 * hour in the time zone; non-zero cells only, sorted by channel (byte order), day, hour. Whole quarter
 * hours come from the channel rollup (a zone's offset is a whole number of quarter hours), the partial
 * ones at the edges from raw events.
 */
export async function heatCells (db: Db, q: WindowQuery & { timeZone: string }): Promise<HeatCell[]> {
  const { whole, edges } = splitWindow(q.since, q.until, QUARTER)
  const pieces: RawBuilder<unknown>[] = []
  if (whole) {
    const from = whole.from === null ? sql`` : sql`AND quarter >= ${iso(whole.from)}::timestamptz`
    pieces.push(sql`SELECT channel_id, quarter AT TIME ZONE ${q.timeZone} AS local, message_count AS m, typing_count AS t
      FROM activity_channel_quarters WHERE guild_id = ${q.guildId} ${from} AND quarter < ${iso(whole.to)}::timestamptz`)
  }
  if (edges.length > 0) {
    pieces.push(sql`SELECT e.channel_id, e.created_at AT TIME ZONE ${q.timeZone} AS local, (e.type = 'message')::int AS m, (e.type = 'typing')::int AS t
      FROM activity_events e WHERE e.guild_id = ${q.guildId} AND e.type IN ('message', 'typing') AND (${edgeCondition(edges)})`)
  }
  const { rows } = await sql<{ channel_id: string; dow: number; hour: number; m: number; t: number }>`
    SELECT channel_id, (extract(isodow FROM local)::int - 1) AS dow, extract(hour FROM local)::int AS hour, sum(m)::int AS m, sum(t)::int AS t
    FROM (${sql.join(pieces, sql` UNION ALL `)}) x
    GROUP BY 1, 2, 3 HAVING sum(m) + sum(t) > 0 ORDER BY 1, 2, 3`.execute(db)
  return rows.map((r) => ({ channelId: r.channel_id, dayOfWeek: r.dow, hour: r.hour, messages: r.m, typing: r.t }))
}

export interface RoleDrift { userId: string; username: string; added: number; removed: number; changes: number; drift: boolean }

/** Members with role changes in the window, by number of changes desc, then user id. */
export async function roleDrift (db: Db, q: WindowQuery & { limit: number }): Promise<RoleDrift[]> {
  const parts = memberParts(q.guildId, q, {
    a: ['role_added_count', "count(*) FILTER (WHERE type = 'role_change' AND change = 'added')"],
    r: ['role_removed_count', "count(*) FILTER (WHERE type = 'role_change' AND change = 'removed')"]
  })
  const { rows } = await sql<{ user_id: string; username: string; a: number; r: number }>`
    WITH w AS (
      SELECT user_id, sum(a) AS a, sum(r) AS r FROM (${parts}) parts
      GROUP BY user_id HAVING sum(a) + sum(r) > 0 ORDER BY sum(a) + sum(r) DESC, user_id LIMIT ${q.limit}
    )
    SELECT w.user_id, u.username, w.a::int AS a, w.r::int AS r FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
    ORDER BY w.a + w.r DESC, w.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, added: r.a, removed: r.r, changes: r.a + r.r, drift: r.a + r.r >= 2 }))
}

export interface ClientUsers { client: string; users: number; previousUsers: number }
export interface NewClient { userId: string; username: string; client: string; firstSeenAt: string }
type Closed = { guildId: string; since: number; until: number }

const MASK = `coalesce(bit_or((CASE WHEN 'desktop' = ANY(clients) THEN 1 ELSE 0 END | CASE WHEN 'web' = ANY(clients) THEN 2 ELSE 0 END |
  CASE WHEN 'mobile' = ANY(clients) THEN 4 ELSE 0 END)) FILTER (WHERE type = 'presence'), 0)`

/** Distinct members per client in the window and in the previous window (previousSince .. since). */
export async function clientUsers (db: Db, q: Closed & { previousSince: number }): Promise<Map<string, { users: number; previousUsers: number }>> {
  const mask: Record<string, [string, string]> = { mask: ['client_mask::int', MASK] }
  // Only days and events with a presence can list a client.
  const presence: [string, string] = ['client_mask <> 0', "e.type = 'presence'"]
  const current = memberParts(q.guildId, q, mask, presence)
  const previous = memberParts(q.guildId, { since: Math.max(q.previousSince, MIN_INSTANT), until: q.since }, mask, presence)
  const { rows } = await grouping(db, (trx) => sql<{ w: string; desktop: number; web: number; mobile: number }>`
    WITH cur AS (SELECT user_id, bit_or(mask) AS mask FROM (${current}) c GROUP BY user_id),
      prev AS (SELECT user_id, bit_or(mask) AS mask FROM (${previous}) p GROUP BY user_id)
    SELECT 'cur' AS w, count(*) FILTER (WHERE mask & 1 <> 0)::int AS desktop, count(*) FILTER (WHERE mask & 2 <> 0)::int AS web,
      count(*) FILTER (WHERE mask & 4 <> 0)::int AS mobile FROM cur
    UNION ALL
    SELECT 'prev', count(*) FILTER (WHERE mask & 1 <> 0)::int, count(*) FILTER (WHERE mask & 2 <> 0)::int,
      count(*) FILTER (WHERE mask & 4 <> 0)::int FROM prev`.execute(trx))
  const cur = rows.find((r) => r.w === 'cur')!
  const prev = rows.find((r) => r.w === 'prev')!
  return new Map((['desktop', 'web', 'mobile'] as const).map((c) => [c, { users: cur[c], previousUsers: prev[c] }]))
}

/**
 * A member's first presence listing a client, when it is in the window and the member had presence
 * events before it; by firstSeenAt, userId, client (desktop, web, mobile).
 */
export async function newClients (db: Db, q: Closed & { limit: number }): Promise<NewClient[]> {
  const { rows } = await sql<{ user_id: string; username: string; client: string; first: Date }>`
    SELECT m.user_id, u.username, m.client, m.first_seen_at AS first FROM activity_member_clients m
    JOIN activity_users u ON u.guild_id = m.guild_id AND u.user_id = m.user_id
    WHERE m.guild_id = ${q.guildId} AND m.first_seen_at >= ${iso(q.since)}::timestamptz AND m.first_seen_at < ${iso(q.until)}::timestamptz
      AND u.first_presence_at < ${iso(q.since)}::timestamptz
    ORDER BY m.first_seen_at, m.user_id, array_position(ARRAY['desktop', 'web', 'mobile'], m.client)
    LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, client: r.client, firstSeenAt: r.first.toISOString() }))
}

export interface ShiftCounts { userId: string; username: string; current: number; previous: number }

/** Message + typing events per member in the window and the previous one, members with current + previous >= minEvents, by |current - previous| desc. */
export async function shiftCounts (db: Db, q: Closed & { previousSince: number; minEvents: number; limit: number }): Promise<ShiftCounts[]> {
  const events = "count(*) FILTER (WHERE type IN ('message', 'typing'))"
  // Only days and events with a message or typing count.
  const counted: [string, string] = ['typing_count + message_count > 0', "e.type IN ('message', 'typing')"]
  const current = memberParts(q.guildId, q, { c: ['typing_count + message_count', events], p: ['0', '0'] }, counted)
  const previous = memberParts(q.guildId, { since: Math.max(q.previousSince, MIN_INSTANT), until: q.since }, { c: ['0', '0'], p: ['typing_count + message_count', events] }, counted)
  // The planner guesses 200 members for the two windows' union and picks a parallel sort-and-merge plan, twice
  // as slow as one hash aggregate over the tens of thousands of members of a large guild.
  const { rows } = await grouping(db, (trx) => {
    return sql<{ user_id: string; username: string; c: number; p: number }>`
      WITH w AS (
        SELECT user_id, sum(c) AS c, sum(p) AS p FROM (${current} UNION ALL ${previous}) parts
        GROUP BY user_id HAVING sum(c) + sum(p) >= ${q.minEvents}
        ORDER BY abs(sum(c) - sum(p)) DESC, user_id LIMIT ${q.limit}
      )
      SELECT w.user_id, u.username, w.c::int AS c, w.p::int AS p FROM w
      JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
      ORDER BY abs(w.c - w.p) DESC, w.user_id`.execute(trx)
  })
  return rows.map((r) => ({ userId: r.user_id, username: r.username, current: r.c, previous: r.p }))
}

// A member's counts over the window, as the suspicion score reads them, with who they are.
export interface MemberCounts extends SuspicionCounts {
  userId: string
  username: string
  score: number
}

// The suspicion score as SQL, from a member's counts t, m, d, rc, p, pm, rl, rf (int8) and nc (0 or 1) and `f`, the
// double sum of the weighted factors but newcomer (an integer 0 or 10, which moves no fraction): that sum
// rounded half up, unless its fraction is within 1e-9 of a half (the double is within some 1e-13 of the
// exact sum, but on the wrong side of the half it would round the wrong way). There, the exact sum of the
// fractions over their common denominator D (the product of the four denominators): twice the numerator
// plus D, divided by 2 x D. Every term is at most 25 x D and the whole at most 201 x D, so below D = 4e16
// it is exact in int8; past it, in numeric (exact integers of any size, and slower). Small counts make
// exact halves common (a member with one typing and one message has 12.5): about one member in ten.
function exactScore (cast: '' | '::numeric'): string {
  const [a, p, m, r] = ['t + m', 'p', 'm', 'rl'].map((x) => `greatest(${x}, 1)${cast}`)
  const d = `${a} * ${p} * ${m} * ${r}`
  const twice = `2 * (25 * t${cast} * ${p} * ${m} * ${r} + 20 * pm${cast} * ${a} * ${m} * ${r} + 20 * least(d, greatest(m, 1))${cast} * ${a} * ${p} * ${r}
      + 10 * rf${cast} * ${a} * ${p} * ${m} + (3 * least(rc, 5) + 10 * nc)${cast} * ${d}) + ${d}`
  // int8 division truncates, which is the floor of a positive quotient; numeric's div() likewise.
  return cast === '' ? `((${twice}) / (2 * ${d}))::int` : `div(${twice}, 2 * ${d})::int`
}
export const SUSPICION_SCORE = `CASE WHEN abs(f - floor(f) - 0.5) > 1e-9 THEN floor(f + 0.5)::int + 10 * nc
    WHEN greatest(t + m, 1)::float8 * greatest(p, 1) * greatest(m, 1) * greatest(rl, 1) < 4e16 THEN ${exactScore('')}
    ELSE ${exactScore('::numeric')} END`
// The double sum of the factors but newcomer, over a member's counts (`of` names each count's expression).
export const suspicionFloatSum = (of: (count: string) => string) => `CASE WHEN ${of('t')} + ${of('m')} > 0 THEN 25 * ${of('t')}::float8 / (${of('t')} + ${of('m')}) ELSE 0 END
    + CASE WHEN ${of('p')} > 0 THEN 20 * ${of('pm')}::float8 / ${of('p')} ELSE 0 END
    + 20 * least(${of('d')}, greatest(${of('m')}, 1))::float8 / greatest(${of('m')}, 1) + 3 * least(${of('rc')}, 5)
    + CASE WHEN ${of('rl')} > 0 THEN 10 * ${of('rf')}::float8 / ${of('rl')} ELSE 0 END`
const COUNTS = ['t', 'm', 'd', 'rc', 'p', 'pm', 'rl', 'rf']

/**
 * The members with an event in the window (every row of the daily rollup, and every group of raw events,
 * holds at least one event) whose suspicion score is at least minScore, by score desc then
 * user id, at most `limit`, with the counts their factors are made of. The score is computed where the
 * rows are (exactly, see SUSPICION_SCORE), so only the answer's members leave the database; newcomers are
 * the members whose first event ever falls in the window (none for an open window).
 * One aggregate pass sums the counts and the double sum; newcomers join by hash; the sort keeps the top.
 */
export async function suspects (db: Db, q: WindowQuery & { minScore: number; limit: number; userId?: string }): Promise<MemberCounts[]> {
  const parts = memberParts(q.guildId, q, {
    t: ['typing_count', "count(*) FILTER (WHERE type = 'typing')"],
    m: ['message_count', "count(*) FILTER (WHERE type = 'message')"],
    d: ['delete_count', "count(*) FILTER (WHERE type = 'message_delete')"],
    rc: ['role_added_count + role_removed_count', "count(*) FILTER (WHERE type = 'role_change')"],
    p: ['presence_count', "count(*) FILTER (WHERE type = 'presence')"],
    pm: ['multi_presence_count', "count(*) FILTER (WHERE type = 'presence' AND cardinality(clients) >= 2)"],
    rl: ['timed_reaction_count', "count(*) FILTER (WHERE type = 'reaction' AND latency_ms IS NOT NULL)"],
    rf: ['fast_reaction_count', "count(*) FILTER (WHERE type = 'reaction' AND latency_ms < 3000)"]
  }, undefined, q.userId)
  // A member's first event ever is in the window exactly when it is at or after since: they have one in it.
  const newcomer = q.since === null
    ? sql`SELECT w.*, 0 AS nc FROM w`
    : sql`SELECT w.*, (n.user_id IS NOT NULL)::int AS nc FROM w
      LEFT JOIN activity_users n ON n.guild_id = ${q.guildId} AND n.user_id = w.user_id AND n.first_seen_at >= ${iso(q.since)}::timestamptz`
  const { rows } = await grouping(db, (trx) => sql<{ user_id: string; username: string; score: number; nc: number; t: number; m: number; d: number; rc: number; p: number; pm: number; rl: number; rf: number }>`
    WITH w AS (
      SELECT user_id, ${sql.raw(COUNTS.map((c) => `sum(${c})::int8 AS ${c}`).join(', '))}, ${sql.raw(suspicionFloatSum((c) => `sum(${c})`))} AS f
      FROM (${parts}) parts GROUP BY user_id
    ), top AS (
      -- OFFSET 0: the score is computed once per member, not again for the filter and the order.
      SELECT * FROM (SELECT *, ${sql.raw(SUSPICION_SCORE)} AS score FROM (${newcomer}) n OFFSET 0) x
      WHERE score >= ${q.minScore} ORDER BY score DESC, user_id LIMIT ${q.limit}
    )
    SELECT top.user_id, u.username, top.score, top.nc, top.t::int AS t, top.m::int AS m, top.d::int AS d, top.rc::int AS rc, top.p::int AS p,
      top.pm::int AS pm, top.rl::int AS rl, top.rf::int AS rf
    FROM top JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = top.user_id
    ORDER BY top.score DESC, top.user_id`.execute(trx))
  return rows.map((r) => ({
    userId: r.user_id,
    username: r.username,
    score: r.score,
    typing: r.t,
    messages: r.m,
    deletes: r.d,
    roleChanges: r.rc,
    presence: r.p,
    multiClientPresence: r.pm,
    reactionsWithLatency: r.rl,
    fastReactions: r.rf,
    newcomer: r.nc === 1
  }))
}

/**
 * Ghosts over a closed window [since, until) (GET /api/ghosts with `until`): typing and message counts per
 * member from the daily rollup's whole days and the raw events of the partial edges, members with a typing
 * event in it, by ghostScore = typing / (messages + 1) desc, typing desc, then user id; at most `limit`.
 */
export async function ghostsInWindow (db: Db, q: WindowQuery & { limit: number }): Promise<Ghost[]> {
  const parts = memberParts(q.guildId, q, {
    t: ['typing_count', "count(*) FILTER (WHERE type = 'typing')"],
    m: ['message_count', "count(*) FILTER (WHERE type = 'message')"]
  }, ['(typing_count > 0 OR message_count > 0)', "e.type IN ('typing', 'message')"])
  const { rows } = await sql<{ user_id: string; username: string; t: number; m: number }>`
    WITH top AS (
      SELECT user_id, sum(t)::int8 AS t, sum(m)::int8 AS m FROM (${parts}) parts
      GROUP BY user_id HAVING sum(t) > 0
      ORDER BY sum(t)::float8 / (sum(m) + 1) DESC, sum(t) DESC, user_id
      LIMIT ${q.limit}
    )
    SELECT top.user_id, u.username, top.t::int AS t, top.m::int AS m FROM top
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = top.user_id
    ORDER BY top.t::float8 / (top.m + 1) DESC, top.t DESC, top.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, typingCount: r.t, messageCount: r.m, ghostScore: r.t / (r.m + 1) }))
}

export interface TimelineRow {
  type: string
  createdAt: number
  seq: string
  id: string | null
  channelId: string | null
  latencyMs: number | null
  status: string | null
  clients: string[] | null
  roleId: string | null
  change: string | null
}

/**
 * One member's events in the window, newest first (same instant: the one stored last first), at most
 * `limit`, after the position `before` when given.
 */
export async function memberEvents (db: Db, q: WindowQuery & { userId: string; types: string[] | null; before: { at: number; seq: string } | null; limit: number }): Promise<TimelineRow[]> {
  const types = q.types === null ? sql`` : sql`AND e.type = ANY(${q.types}::text[])`
  const after = q.before === null ? sql`` : sql`AND (e.created_at, e.seq) < (${iso(q.before.at)}::timestamptz, ${q.before.seq}::int8)`
  const { rows } = await sql<{ type: string; created_at: Date; seq: string; event_id: string | null; channel_id: string | null; latency_ms: number | null; status: string | null; clients: string[] | null; role_id: string | null; change: string | null }>`
    SELECT e.type, e.created_at, e.seq::text AS seq, e.event_id, e.channel_id, e.latency_ms, e.status, e.clients, e.role_id, e.change
    FROM activity_events e
    WHERE e.guild_id = ${q.guildId} AND e.user_id = ${q.userId} AND ${inWindow(q)} ${types} ${after}
    ORDER BY e.created_at DESC, e.seq DESC LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => ({
    type: r.type,
    createdAt: r.created_at.getTime(),
    seq: r.seq,
    id: r.event_id,
    channelId: r.channel_id,
    latencyMs: r.latency_ms,
    status: r.status,
    clients: r.clients,
    roleId: r.role_id,
    change: r.change
  }))
}
