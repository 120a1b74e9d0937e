import type pg from 'pg'
import type { DatabaseHandle } from './handle.ts'
import { bulkWriter, type BulkWriter } from './bulk.ts'
import type { ActivityEvent } from '../lib/activity/event.ts'
import { canonicalInstant, Rollup } from '../lib/activity/rollup.ts'

export interface LoadOptions {
  // Empties the activity tables first, in the same transaction.
  replace?: boolean
  // Rows per INSERT where COPY is not available (PGlite).
  batchSize?: number
  // Distinct (guild, user, day) rollup rows kept in memory before they are written out to a staging table.
  maxRollupRows?: number
  // Called about once a second with the number of events read so far.
  onProgress?: (events: number) => void
}

export interface LoadSummary {
  events: number
  typing: number
  messages: number
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

type Value = string | number

// Columns of the loads' tables, in the order of their rows.
const EVENT_COLUMNS = ['guild_id', 'channel_id', 'user_id', 'username', 'type', 'created_at']
const DAILY_COLUMNS = ['guild_id', 'day', 'user_id', 't', 'm']
const MEMBER_COLUMNS = ['guild_id', 'user_id', 'username', 'last_at', 't', 'm']

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

/**
 * Loads events in one transaction: all of them or, on any error (or LoadAborted from the source),
 * none. Loads run one at a time.
 *
 * Raw events stream into activity_events (COPY on PostgreSQL, batched INSERTs on PGlite) while the
 * (guild, day, user) rollup and the per-member totals are added up in memory; those are then merged
 * into activity_daily and activity_users, one statement each. Memory is bounded by maxRollupRows:
 * beyond it the partial rollup is staged in a temporary table and merged at the end.
 *
 * A table that is empty when the load starts (a first load, or --replace) is filled without its
 * indexes, which are rebuilt before commit; that holds its exclusive lock until the commit. Into a
 * filled activity_events, PostgreSQL loads stage the rows and insert them sorted like the index.
 */
export async function loadActivity (handle: DatabaseHandle, events: AsyncIterable<ActivityEvent> | Iterable<ActivityEvent>, options: LoadOptions = {}): Promise<LoadSummary> {
  const started = performance.now()
  const batchSize = options.batchSize ?? 5000
  const maxRollupRows = options.maxRollupRows ?? 1_000_000
  const postgres = handle.kind === 'postgres'
  const client = await handle.pool.connect()
  const open = (table: string, columns: string[]) => bulkWriter(client, handle.kind, table, columns, { batchRows: batchSize })
  let sink: BulkWriter | null = null
  let n = 0
  let typing = 0
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOAD_LOCK])
    if (options.replace) await client.query('TRUNCATE activity_events, activity_daily, activity_users')
    // Room for the sorts and aggregations over staged rows.
    await client.query("SET LOCAL work_mem = '256MB'")
    await client.query('CREATE TEMP TABLE load_daily (guild_id text COLLATE "C", day date, user_id text COLLATE "C", t int4, m int4) ON COMMIT DROP')
    await client.query('CREATE TEMP TABLE load_members (guild_id text COLLATE "C", user_id text COLLATE "C", username text, last_at timestamptz, t int8, m int8) ON COMMIT DROP')
    const { rows: [empty] } = await client.query<{ events: boolean; daily: boolean; users: boolean }>(`SELECT
      NOT EXISTS (SELECT 1 FROM activity_events) AS events, NOT EXISTS (SELECT 1 FROM activity_daily) AS daily,
      NOT EXISTS (SELECT 1 FROM activity_users) AS users`)
    const rebuild: string[] = []
    if (empty.events) rebuild.push(...await dropIndexes(client, 'activity_events'))
    if (empty.daily) rebuild.push(...await dropIndexes(client, 'activity_daily'))
    if (empty.users) rebuild.push(...await dropIndexes(client, 'activity_users'))
    // Into a filled table, rows sorted like its index reach each index page once instead of at random.
    const stageEvents = postgres && !empty.events
    if (stageEvents) await client.query('CREATE TEMP TABLE load_events (LIKE activity_events) ON COMMIT DROP')
    const eventTable = stageEvents ? 'load_events' : 'activity_events'

    const rollup = new Rollup()
    let staged = 0
    const stageRollup = async () => {
      const row: Value[] = []
      const daily = open('load_daily', DAILY_COLUMNS)
      for (const c of rollup.cells.values()) {
        row[0] = c.guildId; row[1] = c.day; row[2] = c.userId; row[3] = c.t; row[4] = c.m
        await daily.add(row)
      }
      await daily.close()
      const members = open('load_members', MEMBER_COLUMNS)
      for (const u of rollup.members.values()) {
        row[0] = u.guildId; row[1] = u.userId; row[2] = u.username; row[3] = u.lastAt; row[4] = u.t; row[5] = u.m
        await members.add(row)
      }
      await members.close()
      staged++
      rollup.clear()
    }

    sink = open(eventTable, EVENT_COLUMNS)
    const row: Value[] = []
    let lastReport = performance.now()
    const restage = async (pending: Promise<void> | undefined) => {
      if (pending) await pending
      // One connection cannot interleave two COPYs: close the events' COPY, stage, reopen.
      await sink!.close()
      sink = null
      await stageRollup()
      sink = open(eventTable, EVENT_COLUMNS)
    }
    // Synchronous per event; a promise only when the sink or the rollup has to wait for the database.
    const take = (e: ActivityEvent): Promise<void> | undefined => {
      const at = canonicalInstant(e.createdAt)
      row[0] = e.guildId; row[1] = e.channelId; row[2] = e.userId; row[3] = e.username; row[4] = e.type; row[5] = at
      const pending = sink!.add(row)
      rollup.add(e, at)
      n++
      if (e.type === 'typing') typing++
      if ((n & 4095) === 0 && options.onProgress) {
        const now = performance.now()
        if (now - lastReport >= 1000) {
          lastReport = now
          options.onProgress(n)
        }
      }
      return rollup.cells.size >= maxRollupRows ? restage(pending) : pending
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
    await sink!.close()
    sink = null
    options.onProgress?.(n)
    const { guilds, users, days } = rollup
    await stageRollup()

    if (stageEvents) {
      await client.query(`INSERT INTO activity_events (${EVENT_COLUMNS.join(', ')})
        SELECT ${EVENT_COLUMNS.join(', ')} FROM load_events ORDER BY guild_id COLLATE "C", created_at`)
    }
    // Staged once, the rows are already distinct; staged in parts, they are summed first. Upserts go
    // in key order, like the index; inserts into a table without indexes need no order.
    const dailyRows = staged === 1
      ? 'SELECT guild_id, day, user_id, t, m FROM load_daily'
      : 'SELECT guild_id, day, user_id, sum(t), sum(m) FROM load_daily GROUP BY 1, 2, 3'
    await client.query(`
      INSERT INTO activity_daily AS d (guild_id, day, user_id, typing_count, message_count)
      ${dailyRows}
      ${empty.daily
? ''
: `ORDER BY 1, 2, 3 ON CONFLICT (guild_id, day, user_id) DO UPDATE SET
        typing_count = d.typing_count + EXCLUDED.typing_count,
        message_count = d.message_count + EXCLUDED.message_count`}`)
    const memberRows = staged === 1
      ? 'SELECT guild_id, user_id, username, last_at, t, m FROM load_members'
      : `SELECT guild_id, user_id, (array_agg(username ORDER BY last_at DESC))[1], max(last_at), sum(t), sum(m)
         FROM load_members GROUP BY 1, 2`
    await client.query(`
      INSERT INTO activity_users AS u (guild_id, user_id, username, last_seen_at, typing_count, message_count)
      ${memberRows}
      ${empty.users
? ''
: `ORDER BY 1, 2 ON CONFLICT (guild_id, user_id) DO UPDATE SET
        typing_count = u.typing_count + EXCLUDED.typing_count,
        message_count = u.message_count + EXCLUDED.message_count,
        username = CASE WHEN EXCLUDED.last_seen_at >= u.last_seen_at THEN EXCLUDED.username ELSE u.username END,
        last_seen_at = greatest(u.last_seen_at, EXCLUDED.last_seen_at)`}`)
    if (rebuild.length) {
      await client.query("SET LOCAL maintenance_work_mem = '512MB'")
      for (const statement of rebuild) await client.query(statement)
    }
    await client.query('COMMIT')
    client.release()
    // Fresh statistics, so the planner sees a large load at once, and the rollups' visibility maps set
    // for index-only scans (best effort: the data is committed).
    if (postgres && n > 0) {
      await handle.pool.query('VACUUM (ANALYZE) activity_daily, activity_users').catch(() => {})
      await handle.pool.query('ANALYZE activity_events').catch(() => {})
    }
    const seconds = (performance.now() - started) / 1000
    return { events: n, typing, messages: n - typing, guilds: guilds.size, users: users.size, days: days.size, seconds, eventsPerSecond: seconds > 0 ? Math.round(n / seconds) : n }
  } catch (err) {
    sink?.abort()
    const rolledBack = await client.query('ROLLBACK').then(() => true, () => false)
    // A connection that could not even roll back is not given back to the pool.
    client.release(rolledBack ? undefined : true)
    throw err
  }
}
