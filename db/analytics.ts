import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from './types.ts'

type Db = Kysely<Database>

/** A window [since, until) in milliseconds; since null: from the beginning of the data. */
export interface WindowQuery { guildId: string; since: number | null; until: number }

const iso = (ms: number) => new Date(ms).toISOString()
const count = (v: number | string) => Number(v)

// The window's condition on activity_events (aliased e), index-friendly: no OR on a null since.
function inWindow (w: { since: number | null; until: number }): RawBuilder<unknown> {
  return w.since === null
    ? sql`e.created_at < ${iso(w.until)}::timestamptz`
    : sql`e.created_at >= ${iso(w.since)}::timestamptz AND e.created_at < ${iso(w.until)}::timestamptz`
}

export interface Lurker { userId: string; username: string; presenceCount: number; lastPresenceAt: string }

/** Members with at least minPresence presence events in the window and no message, typing or reaction in it. */
export async function lurkers (db: Db, q: WindowQuery & { minPresence: number; limit: number }): Promise<Lurker[]> {
  const { rows } = await sql<{ user_id: string; username: string; p: number; last: Date }>`
    WITH w AS (
      SELECT e.user_id, count(*) FILTER (WHERE e.type = 'presence') AS p, max(e.created_at) FILTER (WHERE e.type = 'presence') AS last
      FROM activity_events e
      WHERE e.guild_id = ${q.guildId} AND ${inWindow(q)} AND e.type IN ('presence', 'message', 'typing', 'reaction')
      GROUP BY e.user_id
      HAVING count(*) FILTER (WHERE e.type = 'presence') >= ${q.minPresence} AND count(*) FILTER (WHERE e.type <> 'presence') = 0
      ORDER BY p DESC, e.user_id LIMIT ${q.limit}
    )
    SELECT w.user_id, u.username, w.p::int AS p, w.last FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
    ORDER BY w.p DESC, w.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, presenceCount: r.p, lastPresenceAt: r.last.toISOString() }))
}

export interface HeatCell { channelId: string; dayOfWeek: number; hour: number; messages: number; typing: number }

/**
 * Message and typing events of the window per channel, local day of the week (0 = Monday) and local
 * hour in the time zone; non-zero cells only, sorted by channel (byte order), day, hour.
 */
export async function heatCells (db: Db, q: WindowQuery & { timeZone: string }): Promise<HeatCell[]> {
  const { rows } = await sql<{ channel_id: string; dow: number; hour: number; m: number; t: number }>`
    SELECT channel_id, (extract(isodow FROM local)::int - 1) AS dow, extract(hour FROM local)::int AS hour,
      count(*) FILTER (WHERE type = 'message')::int AS m, count(*) FILTER (WHERE type = 'typing')::int AS t
    FROM (
      SELECT e.channel_id, e.type, e.created_at AT TIME ZONE ${q.timeZone} AS local FROM activity_events e
      WHERE e.guild_id = ${q.guildId} AND ${inWindow(q)} AND e.type IN ('message', 'typing')
    ) x
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`.execute(db)
  return rows.map((r) => ({ channelId: r.channel_id, dayOfWeek: r.dow, hour: r.hour, messages: r.m, typing: r.t }))
}

export interface RoleDrift { userId: string; username: string; added: number; removed: number; changes: number; drift: boolean }

/** Members with role changes in the window, by number of changes desc, then user id. */
export async function roleDrift (db: Db, q: WindowQuery & { limit: number }): Promise<RoleDrift[]> {
  const { rows } = await sql<{ user_id: string; username: string; a: number; r: number }>`
    WITH w AS (
      SELECT e.user_id, count(*) FILTER (WHERE e.change = 'added') AS a, count(*) FILTER (WHERE e.change = 'removed') AS r
      FROM activity_events e
      WHERE e.guild_id = ${q.guildId} AND ${inWindow(q)} AND e.type = 'role_change'
      GROUP BY e.user_id ORDER BY count(*) DESC, e.user_id LIMIT ${q.limit}
    )
    SELECT w.user_id, u.username, w.a::int AS a, w.r::int AS r FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
    ORDER BY w.a + w.r DESC, w.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, added: r.a, removed: r.r, changes: r.a + r.r, drift: r.a + r.r >= 2 }))
}

export interface ClientUsers { client: string; users: number; previousUsers: number }
export interface NewClient { userId: string; username: string; client: string; firstSeenAt: string }
type Closed = { guildId: string; since: number; until: number }

/** Distinct members per client in the window and in the previous window (since - length .. since). */
export async function clientUsers (db: Db, q: Closed & { previousSince: number }): Promise<Map<string, { users: number; previousUsers: number }>> {
  const { rows } = await sql<{ client: string; users: number; prev: number }>`
    SELECT c.client, count(DISTINCT e.user_id) FILTER (WHERE e.created_at >= ${iso(q.since)}::timestamptz)::int AS users,
      count(DISTINCT e.user_id) FILTER (WHERE e.created_at < ${iso(q.since)}::timestamptz)::int AS prev
    FROM activity_events e CROSS JOIN LATERAL unnest(e.clients) AS c(client)
    WHERE e.guild_id = ${q.guildId} AND e.type = 'presence'
      AND e.created_at >= ${iso(q.previousSince)}::timestamptz AND e.created_at < ${iso(q.until)}::timestamptz
    GROUP BY c.client`.execute(db)
  return new Map(rows.map((r) => [r.client, { users: r.users, previousUsers: r.prev }]))
}

/**
 * A member's first presence listing a client, when it is in the window and the member had presence
 * events before it; by firstSeenAt, userId, client (desktop, web, mobile).
 */
export async function newClients (db: Db, q: Closed & { limit: number }): Promise<NewClient[]> {
  const { rows } = await sql<{ user_id: string; username: string; client: string; first: Date }>`
    WITH firsts AS (
      SELECT e.user_id, c.client, min(e.created_at) AS first
      FROM activity_events e CROSS JOIN LATERAL unnest(e.clients) AS c(client)
      WHERE e.guild_id = ${q.guildId} AND e.type = 'presence' AND e.created_at < ${iso(q.until)}::timestamptz
      GROUP BY 1, 2
    )
    SELECT f.user_id, u.username, f.client, f.first FROM firsts f
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = f.user_id
    WHERE f.first >= ${iso(q.since)}::timestamptz AND EXISTS (
      SELECT 1 FROM activity_events p WHERE p.guild_id = ${q.guildId} AND p.user_id = f.user_id AND p.type = 'presence'
        AND p.created_at < ${iso(q.since)}::timestamptz)
    ORDER BY f.first, f.user_id, array_position(ARRAY['desktop', 'web', 'mobile'], f.client::text)
    LIMIT ${q.limit}`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, client: r.client, firstSeenAt: r.first.toISOString() }))
}

export interface ShiftCounts { userId: string; username: string; current: number; previous: number }

/** Message + typing events per member in the window and the previous one, members with current + previous >= minEvents, by |current - previous| desc. */
export async function shiftCounts (db: Db, q: Closed & { previousSince: number; minEvents: number; limit: number }): Promise<ShiftCounts[]> {
  const { rows } = await sql<{ user_id: string; username: string; c: number; p: number }>`
    WITH w AS (
      SELECT e.user_id, count(*) FILTER (WHERE e.created_at >= ${iso(q.since)}::timestamptz) AS c,
        count(*) FILTER (WHERE e.created_at < ${iso(q.since)}::timestamptz) AS p
      FROM activity_events e
      WHERE e.guild_id = ${q.guildId} AND e.type IN ('message', 'typing')
        AND e.created_at >= ${iso(q.previousSince)}::timestamptz AND e.created_at < ${iso(q.until)}::timestamptz
      GROUP BY e.user_id HAVING count(*) >= ${q.minEvents}
      ORDER BY abs(count(*) FILTER (WHERE e.created_at >= ${iso(q.since)}::timestamptz) - count(*) FILTER (WHERE e.created_at < ${iso(q.since)}::timestamptz)) DESC, e.user_id
      LIMIT ${q.limit}
    )
    SELECT w.user_id, u.username, w.c::int AS c, w.p::int AS p FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id
    ORDER BY abs(w.c - w.p) DESC, w.user_id`.execute(db)
  return rows.map((r) => ({ userId: r.user_id, username: r.username, current: r.c, previous: r.p }))
}

export interface MemberCounts {
  userId: string
  username: string
  firstSeenAt: number
  typing: number
  messages: number
  deletes: number
  roleChanges: number
  presence: number
  multiClientPresence: number
  reactionsWithLatency: number
  fastReactions: number
}

/** Per member with an event in the window: the counts the suspicion factors are made of. */
export async function suspicionCounts (db: Db, q: WindowQuery): Promise<MemberCounts[]> {
  const { rows } = await sql<{ user_id: string; username: string; first: Date; t: number; m: number; d: number; rc: number; p: number; pm: number; rl: number; rf: number }>`
    WITH w AS (
      SELECT e.user_id,
        count(*) FILTER (WHERE e.type = 'typing')::int AS t, count(*) FILTER (WHERE e.type = 'message')::int AS m,
        count(*) FILTER (WHERE e.type = 'message_delete')::int AS d, count(*) FILTER (WHERE e.type = 'role_change')::int AS rc,
        count(*) FILTER (WHERE e.type = 'presence')::int AS p,
        count(*) FILTER (WHERE e.type = 'presence' AND cardinality(e.clients) >= 2)::int AS pm,
        count(*) FILTER (WHERE e.type = 'reaction' AND e.latency_ms IS NOT NULL)::int AS rl,
        count(*) FILTER (WHERE e.type = 'reaction' AND e.latency_ms < 3000)::int AS rf
      FROM activity_events e
      WHERE e.guild_id = ${q.guildId} AND ${inWindow(q)}
      GROUP BY e.user_id
    )
    SELECT w.*, u.username, u.first_seen_at AS first FROM w
    JOIN activity_users u ON u.guild_id = ${q.guildId} AND u.user_id = w.user_id`.execute(db)
  return rows.map((r) => ({
    userId: r.user_id,
    username: r.username,
    firstSeenAt: r.first.getTime(),
    typing: count(r.t),
    messages: count(r.m),
    deletes: count(r.d),
    roleChanges: count(r.rc),
    presence: count(r.p),
    multiClientPresence: count(r.pm),
    reactionsWithLatency: count(r.rl),
    fastReactions: count(r.rf)
  }))
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
