import type pg from 'pg'
import type { DatabaseHandle } from './handle.ts'
import { bulkWriter, type BulkValue, type BulkWriter } from './bulk.ts'
import type { ActivityEvent } from '../lib/activity/event.ts'
import { canonicalInstant } from '../lib/activity/rollup.ts'

export interface LoadOptions {
  // Empties the activity tables first, in the same transaction.
  replace?: boolean
  // Rows per INSERT where COPY is not available (PGlite).
  batchSize?: number
  // Called about once a second with the number of events read so far.
  onProgress?: (events: number) => void
  // Refresh the planner's statistics after the load (default true); small frequent loads (the API) skip it.
  analyze?: boolean
}

export interface LoadSummary {
  // Events stored (duplicates not included).
  events: number
  // Events skipped because their (guildId, id) was stored already or came earlier in the same load.
  duplicates: number
  typing: number
  messages: number
  // Stored events per type.
  types: Record<string, number>
  guilds: number
  users: number
  days: number
  seconds: number
  eventsPerSecond: number
}

// Thrown by an event source to stop a load; the transaction is rolled back and nothing stays.
export class LoadAborted extends Error {
  override name = 'LoadAborted'
}

// Key of the transaction-level advisory lock that runs loads one at a time.
const LOAD_LOCK = 0x61637476

type Value = BulkValue

// Columns of the staged events, in the order of their rows; all but `ord` go to activity_events.
const STORED_COLUMNS = ['guild_id', 'channel_id', 'user_id', 'username', 'type', 'created_at', 'event_id', 'latency_ms', 'status', 'clients', 'role_id', 'change']
const STAGE_COLUMNS = ['ord', ...STORED_COLUMNS]

// The daily rollup's columns, their aggregates over the staged events and how a load merges them.
const DAILY: [column: string, aggregate: string, merge: 'sum' | 'or' | 'max'][] = [
  ['typing_count', "count(*) FILTER (WHERE type = 'typing')", 'sum'],
  ['message_count', "count(*) FILTER (WHERE type = 'message')", 'sum'],
  ['event_count', 'count(*)', 'sum'],
  ['presence_count', "count(*) FILTER (WHERE type = 'presence')", 'sum'],
  ['multi_presence_count', "count(*) FILTER (WHERE type = 'presence' AND cardinality(clients) >= 2)", 'sum'],
  ['reaction_count', "count(*) FILTER (WHERE type = 'reaction')", 'sum'],
  ['timed_reaction_count', "count(*) FILTER (WHERE type = 'reaction' AND latency_ms IS NOT NULL)", 'sum'],
  ['fast_reaction_count', "count(*) FILTER (WHERE type = 'reaction' AND latency_ms < 3000)", 'sum'],
  ['delete_count', "count(*) FILTER (WHERE type = 'message_delete')", 'sum'],
  ['role_added_count', "count(*) FILTER (WHERE type = 'role_change' AND change = 'added')", 'sum'],
  ['role_removed_count', "count(*) FILTER (WHERE type = 'role_change' AND change = 'removed')", 'sum'],
  ['client_mask', `coalesce(bit_or((CASE WHEN 'desktop' = ANY(clients) THEN 1 ELSE 0 END | CASE WHEN 'web' = ANY(clients) THEN 2 ELSE 0 END |
    CASE WHEN 'mobile' = ANY(clients) THEN 4 ELSE 0 END)) FILTER (WHERE type = 'presence'), 0)`, 'or'],
  ['last_presence_at', "max(created_at) FILTER (WHERE type = 'presence')", 'max'],
  // The quarter hours of the UTC day with an event, 00:00-00:15 leftmost.
  ['quarter_mask', `bit_or(set_bit(B'${'0'.repeat(96)}'::bit(96),
    date_part('hour', created_at AT TIME ZONE 'UTC')::int * 4 + date_part('minute', created_at AT TIME ZONE 'UTC')::int / 15, 1))`, 'or']
]
// The guild quarter rollup's counts, by event type.
const GUILD_QUARTERS: [column: string, type: string][] = [['message_count', 'message'], ['typing_count', 'typing'], ['delete_count', 'message_delete'],
  ['reaction_count', 'reaction'], ['presence_count', 'presence'], ['role_change_count', 'role_change'], ['join_count', 'join'], ['leave_count', 'leave']]
// The first and the last quarter hour (0-95) set in a quarter_mask (NULL for NULL).
const firstQuarter = (mask: string) => `(position('1' IN ${mask}::text) - 1)`
const lastQuarter = (mask: string) => `(96 - position('1' IN reverse(${mask}::text)))`

/**
 * The statement that keeps activity_day_edges (migration 024) in step with the quarter masks the load adds
 * to activity_daily. It reads activity_daily as it was before the load, so it runs before the daily merge
 * (in one statement, its snapshot is the statement's). For each member day whose first or last quarter
 * hour changes: the day's first_count and last_count move from the old quarter hour to the new one; and at
 * the midnights before and after that day, the member's span (first quarter hour of the day after, last of
 * the day before) is taken out of straddle_count as it was and put back as it is now. Only counts that
 * change are written.
 */
function dayEdgesStatement (source: string): string {
  const zero = `B'${'0'.repeat(96)}'::bit(96)`
  const bit = `set_bit(${zero}, date_part('hour', created_at AT TIME ZONE 'UTC')::int * 4 + date_part('minute', created_at AT TIME ZONE 'UTC')::int / 15, 1)`
  return `
      INSERT INTO activity_day_edges AS e (guild_id, day, quarter, first_count, last_count, straddle_count)
      WITH touched AS MATERIALIZED (
        SELECT a.guild_id, a.day, a.user_id, d.quarter_mask AS old, coalesce(d.quarter_mask, ${zero}) | a.mask AS new
        FROM (SELECT guild_id, (created_at AT TIME ZONE 'UTC')::date AS day, user_id, bit_or(${bit}) AS mask FROM ${source} GROUP BY 1, 2, 3) a
        LEFT JOIN activity_daily d ON d.guild_id = a.guild_id AND d.day = a.day AND d.user_id = a.user_id
      ),
      changed AS MATERIALIZED (
        SELECT guild_id, day, user_id, old IS NOT NULL AS existed, ${firstQuarter('old')} AS old_first, ${lastQuarter('old')} AS old_last,
          ${firstQuarter('new')} AS new_first, ${lastQuarter('new')} AS new_last
        FROM touched
        WHERE old IS NULL OR ${firstQuarter('old')} <> ${firstQuarter('new')} OR ${lastQuarter('old')} <> ${lastQuarter('new')}
      ),
      midnights AS (SELECT DISTINCT guild_id, user_id, day FROM (SELECT guild_id, user_id, day FROM changed UNION ALL SELECT guild_id, user_id, day + 1 FROM changed) m),
      sides AS (
        SELECT m.guild_id, m.day,
          CASE WHEN pt.user_id IS NULL THEN pd.quarter_mask ELSE pt.old END AS before_old, CASE WHEN pt.user_id IS NULL THEN pd.quarter_mask ELSE pt.new END AS before_new,
          CASE WHEN ct.user_id IS NULL THEN cd.quarter_mask ELSE ct.old END AS after_old, CASE WHEN ct.user_id IS NULL THEN cd.quarter_mask ELSE ct.new END AS after_new
        FROM midnights m
        LEFT JOIN touched pt ON pt.guild_id = m.guild_id AND pt.day = m.day - 1 AND pt.user_id = m.user_id
        LEFT JOIN activity_daily pd ON pt.user_id IS NULL AND pd.guild_id = m.guild_id AND pd.day = m.day - 1 AND pd.user_id = m.user_id
        LEFT JOIN touched ct ON ct.guild_id = m.guild_id AND ct.day = m.day AND ct.user_id = m.user_id
        LEFT JOIN activity_daily cd ON ct.user_id IS NULL AND cd.guild_id = m.guild_id AND cd.day = m.day AND cd.user_id = m.user_id
      ),
      spans AS (
        SELECT guild_id, day, -1 AS sign, ${firstQuarter('after_old')} AS b, ${lastQuarter('before_old')} AS a FROM sides WHERE before_old IS NOT NULL AND after_old IS NOT NULL
        UNION ALL
        SELECT guild_id, day, 1, ${firstQuarter('after_new')}, ${lastQuarter('before_new')} FROM sides WHERE before_new IS NOT NULL AND after_new IS NOT NULL
      )
      SELECT guild_id, day, q, sum(f), sum(l), sum(s) FROM (
        SELECT guild_id, day, new_first AS q, 1 AS f, 0 AS l, 0 AS s FROM changed
        UNION ALL SELECT guild_id, day, old_first, -1, 0, 0 FROM changed WHERE existed
        UNION ALL SELECT guild_id, day, new_last, 0, 1, 0 FROM changed
        UNION ALL SELECT guild_id, day, old_last, 0, -1, 0 FROM changed WHERE existed
        UNION ALL SELECT guild_id, day, b + 1, 0, 0, sign FROM spans WHERE b < a
        UNION ALL SELECT guild_id, day, a + 1, 0, 0, -sign FROM spans WHERE b < a AND a < 95
      ) x
      GROUP BY 1, 2, 3 HAVING sum(f) <> 0 OR sum(l) <> 0 OR sum(s) <> 0
      ORDER BY 1, 2, 3
      ON CONFLICT (guild_id, day, quarter) DO UPDATE SET first_count = e.first_count + EXCLUDED.first_count,
        last_count = e.last_count + EXCLUDED.last_count, straddle_count = e.straddle_count + EXCLUDED.straddle_count`
}

const mergeDaily = ([column, , merge]: typeof DAILY[number]) =>
  merge === 'sum' ? `${column} = d.${column} + EXCLUDED.${column}` : merge === 'or' ? `${column} = d.${column} | EXCLUDED.${column}` : `${column} = greatest(d.${column}, EXCLUDED.${column})`

/**
 * The statements that merge a load's stored events (the relation `source`: its STAGE_COLUMNS) into every
 * rollup: per guild its totals and its events of each type per quarter hour; activity_daily per guild, UTC day
 * and member; a member's first presence listing each client; message, typing and reaction events per channel
 * and quarter hour; per member the username of their latest event
 * (of events at the same instant, the one stored last), first and last event, first presence and totals.
 * Upserts go in key order, like the index; inserts into a table without indexes (`empty`) need no order.
 * A merge that would change nothing (a client seen earlier already, a member's older events of no count)
 * writes nothing: no new row version, no WAL.
 */
function rollupStatements (source: string, empty: { daily: boolean; users: boolean }): string[] {
  return [`
      -- First: a guild's new members are those activity_users does not list yet.
      INSERT INTO activity_guilds AS g (guild_id, event_count, member_count, last_event_at)
      SELECT s.guild_id, s.events, coalesce(n.members, 0), s.last
      FROM (SELECT guild_id, count(*) AS events, max(created_at) AS last FROM ${source} GROUP BY 1) s
      LEFT JOIN (
        SELECT guild_id, count(*) AS members FROM (SELECT DISTINCT guild_id, user_id FROM ${source}) m
        WHERE NOT EXISTS (SELECT 1 FROM activity_users u WHERE u.guild_id = m.guild_id AND u.user_id = m.user_id) GROUP BY 1
      ) n ON n.guild_id = s.guild_id
      ORDER BY 1
      ON CONFLICT (guild_id) DO UPDATE SET event_count = g.event_count + EXCLUDED.event_count, member_count = g.member_count + EXCLUDED.member_count,
        last_event_at = greatest(g.last_event_at, EXCLUDED.last_event_at)`, `
      INSERT INTO activity_guild_quarters AS q (guild_id, quarter, ${GUILD_QUARTERS.map(([c]) => c).join(', ')})
      SELECT guild_id, date_bin('15 minutes', created_at, '2000-01-01T00:00:00Z'), ${GUILD_QUARTERS.map(([, t]) => `count(*) FILTER (WHERE type = '${t}')`).join(', ')}
      FROM ${source} GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (guild_id, quarter) DO UPDATE SET ${GUILD_QUARTERS.map(([c]) => `${c} = q.${c} + EXCLUDED.${c}`).join(', ')}`,
  // Before the daily merge: it reads the masks as they were.
  dayEdgesStatement(source), `
      INSERT INTO activity_daily AS d (guild_id, day, user_id, ${DAILY.map(([c]) => c).join(', ')})
      SELECT guild_id, (created_at AT TIME ZONE 'UTC')::date, user_id, ${DAILY.map(([, a]) => a).join(', ')}
      FROM ${source} GROUP BY 1, 2, 3
      ${empty.daily ? '' : `ORDER BY 1, 2, 3 ON CONFLICT (guild_id, day, user_id) DO UPDATE SET ${DAILY.map(mergeDaily).join(', ')}`}`, `
      INSERT INTO activity_member_clients AS m (guild_id, user_id, client, first_seen_at)
      SELECT * FROM (
        SELECT l.guild_id, l.user_id, c.client, min(l.created_at) AS first FROM ${source} l CROSS JOIN LATERAL unnest(l.clients) AS c(client)
        WHERE l.type = 'presence' GROUP BY 1, 2, 3
      ) f
      -- Read, not merged, when nothing changes: a merge that changes nothing still locks (and logs) the row.
      WHERE NOT EXISTS (SELECT 1 FROM activity_member_clients k
        WHERE k.guild_id = f.guild_id AND k.user_id = f.user_id AND k.client = f.client AND k.first_seen_at <= f.first)
      ORDER BY 1, 2, 3
      ON CONFLICT (guild_id, user_id, client) DO UPDATE SET first_seen_at = EXCLUDED.first_seen_at
        WHERE EXCLUDED.first_seen_at < m.first_seen_at`, `
      INSERT INTO activity_channel_quarters AS q (guild_id, quarter, channel_id, message_count, typing_count, reaction_count)
      SELECT guild_id, date_bin('15 minutes', created_at, '2000-01-01T00:00:00Z'), channel_id,
        count(*) FILTER (WHERE type = 'message'), count(*) FILTER (WHERE type = 'typing'), count(*) FILTER (WHERE type = 'reaction')
      FROM ${source} WHERE type IN ('message', 'typing', 'reaction') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (guild_id, quarter, channel_id) DO UPDATE SET message_count = q.message_count + EXCLUDED.message_count,
        typing_count = q.typing_count + EXCLUDED.typing_count, reaction_count = q.reaction_count + EXCLUDED.reaction_count`, `
      INSERT INTO activity_users AS u (guild_id, user_id, username, last_seen_at, first_seen_at, first_presence_at, typing_count, message_count)
      SELECT guild_id, user_id, (array_agg(username ORDER BY created_at DESC, ord DESC))[1], max(created_at), min(created_at),
        min(created_at) FILTER (WHERE type = 'presence'), count(*) FILTER (WHERE type = 'typing'), count(*) FILTER (WHERE type = 'message')
      FROM ${source} GROUP BY 1, 2
      ${empty.users
? ''
: `ORDER BY 1, 2 ON CONFLICT (guild_id, user_id) DO UPDATE SET
        typing_count = u.typing_count + EXCLUDED.typing_count,
        message_count = u.message_count + EXCLUDED.message_count,
        username = CASE WHEN EXCLUDED.last_seen_at >= u.last_seen_at THEN EXCLUDED.username ELSE u.username END,
        last_seen_at = greatest(u.last_seen_at, EXCLUDED.last_seen_at),
        first_seen_at = least(u.first_seen_at, EXCLUDED.first_seen_at),
        first_presence_at = least(u.first_presence_at, EXCLUDED.first_presence_at)
      WHERE EXCLUDED.typing_count > 0 OR EXCLUDED.message_count > 0 OR EXCLUDED.last_seen_at >= u.last_seen_at
        OR EXCLUDED.first_seen_at < u.first_seen_at
        OR (EXCLUDED.first_presence_at IS NOT NULL AND (u.first_presence_at IS NULL OR EXCLUDED.first_presence_at < u.first_presence_at))`}`]
}

/**
 * Announces each guild of a load's stored events (the relation `source`) on the change bus, in the load's
 * transaction: the key is the JSON of lib/activity/live.ts (`parseActivityChange`): the guild, its events in
 * all and per type, the greatest createdAt (ms since the epoch), and the transaction, which makes each key
 * unique (the bus may deliver a change twice). A few hundred bytes, far below NOTIFY's 8000.
 */
const announcement = (source: string) => `
      SELECT emit_change('activity', json_build_object('guildId', guild_id, 'events', sum(n), 'types', json_object_agg(type, n),
        'lastEventAt', floor(extract(epoch FROM max(last)) * 1000)::int8, 'load', pg_current_xact_id()::text)::text)
      FROM (SELECT guild_id, type, count(*) AS n, max(created_at) AS last FROM ${source} GROUP BY 1, 2) t GROUP BY guild_id`

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`

/**
 * Drops a table's indexes (its primary key included) and returns the statements that rebuild them:
 * filling an empty table and then building each index once is several times faster than
 * maintaining the indexes row by row.
 */
async function dropIndexes (client: pg.PoolClient, table: string): Promise<string[]> {
  const { rows } = await client.query<{ name: string; definition: string; constraint: string | null; kind: string | null }>(`
    SELECT ci.relname AS name, pg_get_indexdef(i.indexrelid) AS definition, con.conname AS constraint, con.contype AS kind
    FROM pg_index i
    JOIN pg_class ci ON ci.oid = i.indexrelid
    LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid AND con.contype IN ('p', 'u')
    WHERE i.indrelid = to_regclass($1)`, [table])
  const rebuild: string[] = []
  for (const index of rows) {
    if (index.constraint) {
      await client.query(`ALTER TABLE ${table} DROP CONSTRAINT ${quoteIdent(index.constraint)}`)
      rebuild.push(index.definition, `ALTER TABLE ${table} ADD CONSTRAINT ${quoteIdent(index.constraint)} ${index.kind === 'p' ? 'PRIMARY KEY' : 'UNIQUE'} USING INDEX ${quoteIdent(index.name)}`)
    } else {
      await client.query(`DROP INDEX ${quoteIdent(index.name)}`)
      rebuild.push(index.definition)
    }
  }
  return rebuild
}

/** A load's summary from the counts of what it stored; `read` events were read in all, since `started`. */
function loadSummary (s: { events: number; guilds: number; users: number; days: number; types: Record<string, number> | null }, duplicates: number, read: number, started: number): LoadSummary {
  const types = s.types ?? {}
  const seconds = (performance.now() - started) / 1000
  return {
    events: s.events,
    duplicates,
    typing: types.typing ?? 0,
    messages: types.message ?? 0,
    types,
    guilds: s.guilds,
    users: s.users,
    days: s.days,
    seconds,
    eventsPerSecond: seconds > 0 ? Math.round(read / seconds) : read
  }
}
/**
 * Loads events in one transaction: all of them or, on any error (or LoadAborted from the source),
 * none. Loads run one at a time.
 *
 * Events stream into a staging table (COPY on PostgreSQL, batched INSERTs on PGlite) numbered in
 * arrival order. Duplicates (an id seen earlier in the load, or already stored for the guild) are
 * removed there and counted; the rest go into activity_events in arrival order, and the rollups
 * (activity_daily per guild, UTC day and member; activity_users per member; activity_member_clients;
 * activity_channel_quarters; activity_guilds and activity_guild_quarters) are merged from the staging table, one statement each. A guild
 * with new events is announced on the change bus ('activity', see `announcement`) when the load commits.
 *
 * A table that is empty when the load starts (a first load, or --replace) is filled without its
 * indexes, which are rebuilt before commit; that holds its exclusive lock until the commit.
 */
export async function loadActivity (handle: DatabaseHandle, events: AsyncIterable<ActivityEvent> | Iterable<ActivityEvent>, options: LoadOptions = {}): Promise<LoadSummary> {
  const started = performance.now()
  const batchSize = options.batchSize ?? 5000
  const postgres = handle.kind === 'postgres'
  const client = await handle.pool.connect()
  let sink: BulkWriter | null = null
  let n = 0
  let withIds = 0
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOAD_LOCK])
    if (options.replace) await client.query('TRUNCATE activity_events, activity_daily, activity_users, activity_member_clients, activity_channel_quarters, activity_guilds, activity_guild_quarters, activity_day_edges')
    // Room for the sorts and aggregations over staged rows.
    await client.query("SET LOCAL work_mem = '256MB'")
    await client.query(`CREATE TEMP TABLE load_events (ord int8, guild_id text COLLATE "C", channel_id text COLLATE "C",
      user_id text COLLATE "C", username text, type text, created_at timestamptz, event_id text COLLATE "C", latency_ms int4,
      status text, clients text[], role_id text COLLATE "C", change text) ON COMMIT DROP`)
    const { rows: [empty] } = await client.query<{ events: boolean; daily: boolean; users: boolean }>(`SELECT
      NOT EXISTS (SELECT 1 FROM activity_events) AS events, NOT EXISTS (SELECT 1 FROM activity_daily) AS daily,
      NOT EXISTS (SELECT 1 FROM activity_users) AS users`)
    const rebuild: string[] = []
    if (empty.events) rebuild.push(...await dropIndexes(client, 'activity_events'))
    if (empty.daily) rebuild.push(...await dropIndexes(client, 'activity_daily'))
    if (empty.users) rebuild.push(...await dropIndexes(client, 'activity_users'))

    sink = bulkWriter(client, handle.kind, 'load_events', STAGE_COLUMNS, { batchRows: batchSize })
    const row: Value[] = []
    let lastReport = performance.now()
    // Synchronous per event; a promise only when the sink has to wait for the database.
    const take = (e: ActivityEvent): Promise<void> | undefined => {
      const at = canonicalInstant(e.createdAt)
      n++
      row[0] = n; row[1] = e.guildId; row[2] = e.channelId ?? null; row[3] = e.userId; row[4] = e.username; row[5] = e.type; row[6] = at
      row[7] = e.id ?? null; row[8] = e.latencyMs ?? null; row[9] = e.status ?? null
      row[10] = e.type === 'presence' ? (e.clients ?? []) : null; row[11] = e.roleId ?? null; row[12] = e.change ?? null
      if (e.id !== undefined) withIds++
      if ((n & 4095) === 0 && options.onProgress) {
        const now = performance.now()
        if (now - lastReport >= 1000) {
          lastReport = now
          options.onProgress(n)
        }
      }
      return sink!.add(row)
    }
    if (Symbol.asyncIterator in events) {
      for await (const e of events) {
        const pending = take(e)
        if (pending) await pending
      }
    } else {
      // A synchronous source (the generator) costs no promise per event.
      for (const e of events) {
        const pending = take(e)
        if (pending) await pending
      }
    }
    await sink.close()
    sink = null
    options.onProgress?.(n)

    let duplicates = 0
    if (withIds > 0) {
      // The second copy of an id within the load, then ids the guild already has.
      const inLoad = await client.query(`DELETE FROM load_events l USING (
          SELECT ord FROM (SELECT ord, row_number() OVER (PARTITION BY guild_id, event_id ORDER BY ord) AS rn
          FROM load_events WHERE event_id IS NOT NULL) x WHERE rn > 1) d
        WHERE l.ord = d.ord`)
      duplicates += inLoad.rowCount ?? 0
      if (!empty.events) {
        const stored = await client.query(`DELETE FROM load_events l USING activity_events e
          WHERE l.event_id IS NOT NULL AND e.guild_id = l.guild_id AND e.event_id = l.event_id`)
        duplicates += stored.rowCount ?? 0
      }
    }
    const { rows: [s] } = await client.query<{ events: number; guilds: number; users: number; days: number; types: Record<string, number> | null }>(`
      SELECT count(*)::int AS events, count(DISTINCT guild_id)::int AS guilds, count(DISTINCT user_id)::int AS users,
        count(DISTINCT (created_at AT TIME ZONE 'UTC')::date)::int AS days,
        (SELECT json_object_agg(type, n) FROM (SELECT type, count(*)::int AS n FROM load_events GROUP BY type) t) AS types
      FROM load_events`)

    await client.query(`INSERT INTO activity_events (${STORED_COLUMNS.join(', ')})
      SELECT ${STORED_COLUMNS.join(', ')} FROM load_events ORDER BY ord`)
    for (const statement of rollupStatements('load_events', empty)) await client.query(statement)
    if (rebuild.length) {
      await client.query("SET LOCAL maintenance_work_mem = '512MB'")
      for (const statement of rebuild) await client.query(statement)
    }
    if (s.events > 0) await client.query(announcement('load_events'))
    await client.query('COMMIT')
    client.release()
    // Fresh statistics, so the planner sees a large load at once, and the rollups' visibility maps set
    // for index-only scans (best effort: the data is committed).
    if (postgres && s.events > 0 && options.analyze !== false) {
      await handle.pool.query('VACUUM (ANALYZE) activity_daily, activity_users, activity_day_edges').catch(() => {})
      await handle.pool.query('ANALYZE activity_events').catch(() => {})
    }
    return loadSummary(s, duplicates, n, started)
  } catch (err) {
    sink?.abort()
    const rolledBack = await client.query('ROLLBACK').then(() => true, () => false)
    // A connection that could not even roll back is not given back to the pool.
    client.release(rolledBack ? undefined : true)
    throw err
  }
}

// A stored event's values as the arrays of one batch statement, by STAGE_COLUMNS position, with their SQL array types.
const BATCH_TYPES = ['int8', 'text', 'text', 'text', 'text', 'text', 'timestamptz', 'text', 'int4', 'text', 'text', 'text', 'text']

/**
 * Loads a batch of events (the ingestion API's: up to a thousand or so) with the same result as
 * loadActivity, all or nothing, in one statement after the load lock: the events go in as one array
 * per column, duplicates are dropped, the rest are stored and merged into every rollup, and their
 * guilds are announced, without a staging table, a COPY or a round trip per step. Loads still run one at
 * a time: the lock is taken first, so the statement's snapshot sees every load committed before it and
 * the duplicate check is exact. PGlite loads through loadActivity.
 */
export async function loadBatch (handle: DatabaseHandle, events: readonly ActivityEvent[]): Promise<LoadSummary> {
  if (handle.kind !== 'postgres') return loadActivity(handle, events, { analyze: false })
  const started = performance.now()
  const columns: unknown[][] = STAGE_COLUMNS.map(() => new Array(events.length))
  for (let i = 0; i < events.length; i++) {
    const e = events[i]
    columns[0][i] = i + 1; columns[1][i] = e.guildId; columns[2][i] = e.channelId ?? null; columns[3][i] = e.userId
    columns[4][i] = e.username; columns[5][i] = e.type; columns[6][i] = canonicalInstant(e.createdAt); columns[7][i] = e.id ?? null
    columns[8][i] = e.latencyMs ?? null; columns[9][i] = e.status ?? null
    // Clients as an array literal per event (known names, nothing to quote): arrays of arrays must be rectangular.
    columns[10][i] = e.type === 'presence' ? `{${(e.clients ?? []).join(',')}}` : null
    columns[11][i] = e.roleId ?? null; columns[12][i] = e.change ?? null
  }
  const unnest = STAGE_COLUMNS.map((_, i) => `$${i + 1}::${BATCH_TYPES[i]}[]`).join(', ')
  const rollups = rollupStatements('fresh', { daily: false, users: false }).map((statement, i) => `r${i} AS (${statement})`).join(',\n')
  const client = await handle.pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOAD_LOCK])
    const { rows: [s] } = await client.query<{ events: number; duplicates: number; guilds: number; users: number; days: number; types: Record<string, number> | null; announced: number }>(`
      WITH input AS MATERIALIZED (
        SELECT ord, guild_id COLLATE "C" AS guild_id, channel_id COLLATE "C" AS channel_id, user_id COLLATE "C" AS user_id, username, type,
          created_at, event_id COLLATE "C" AS event_id, latency_ms, status, clients::text[] AS clients, role_id COLLATE "C" AS role_id, change
        FROM unnest(${unnest}) AS l(${STAGE_COLUMNS.join(', ')})
      ),
      fresh AS MATERIALIZED (
        -- Events without id; of an id, its first copy within the batch, unless the guild has it already.
        SELECT ${STAGE_COLUMNS.join(', ')} FROM (
          SELECT l.*, row_number() OVER (PARTITION BY l.guild_id, l.event_id ORDER BY l.ord) AS copy FROM input l
        ) l
        WHERE l.event_id IS NULL OR (l.copy = 1 AND NOT EXISTS (SELECT 1 FROM activity_events e WHERE e.guild_id = l.guild_id AND e.event_id = l.event_id))
      ),
      stored AS (
        INSERT INTO activity_events (${STORED_COLUMNS.join(', ')})
        SELECT ${STORED_COLUMNS.join(', ')} FROM fresh ORDER BY ord
      ),
      ${rollups},
      announced AS (${announcement('fresh')})
      SELECT count(*)::int AS events, (SELECT count(*) FROM input)::int - count(*)::int AS duplicates,
        count(DISTINCT guild_id)::int AS guilds, count(DISTINCT user_id)::int AS users,
        count(DISTINCT (created_at AT TIME ZONE 'UTC')::date)::int AS days,
        (SELECT json_object_agg(type, n) FROM (SELECT type, count(*)::int AS n FROM fresh GROUP BY type) t) AS types,
        (SELECT count(*) FROM announced)::int AS announced
      FROM fresh`, columns)
    await client.query('COMMIT')
    client.release()
    return loadSummary(s, s.duplicates, events.length, started)
  } catch (err) {
    const rolledBack = await client.query('ROLLBACK').then(() => true, () => false)
    client.release(rolledBack ? undefined : true)
    throw err
  }
}
