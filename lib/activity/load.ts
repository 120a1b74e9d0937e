import { once } from 'node:events'
import { from as copyFrom } from 'pg-copy-streams'
import type { DatabaseHandle } from '../../db/index.ts'
import type { ActivityEvent } from './event.ts'

export interface LoadSummary {
  events: number
  typing: number
  messages: number
  guilds: number
  users: number
  days: number
  seconds: number
}

export interface LoadOptions {
  // Empties the activity tables first (in the same transaction).
  replace?: boolean
  onProgress?: (events: number) => void
}

const copyText = (s: string) => s.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'))

// Thrown by the event source to stop a load; the transaction is rolled back and nothing stays.
export class LoadAborted extends Error {}

/**
 * Loads events in one transaction: raw rows go to a temporary table (COPY on PostgreSQL, batches on
 * PGlite), then into activity_events, and the daily and per-user rollups are added up from that
 * table in SQL, so memory stays flat whatever the number of events.
 */
export async function loadActivity(handle: DatabaseHandle, events: AsyncIterable<ActivityEvent>, options: LoadOptions = {}): Promise<LoadSummary> {
  const started = performance.now()
  const client = await handle.pool.connect()
  let n = 0
  let typing = 0
  try {
    await client.query('BEGIN')
    if (options.replace) await client.query('TRUNCATE activity_events, activity_daily, activity_totals')
    await client.query('CREATE TEMP TABLE activity_load (LIKE activity_events) ON COMMIT DROP')
    const count = (e: ActivityEvent) => {
      n++
      if (e.type === 'typing') typing++
      if (n % 100_000 === 0) options.onProgress?.(n)
    }
    if (handle.kind === 'postgres') {
      const copy = client.query(copyFrom('COPY activity_load (guild_id, channel_id, user_id, username, type, created_at) FROM STDIN'))
      let failed: Error | null = null
      copy.on('error', (err: Error) => { failed = err })
      let pending = ''
      try {
        for await (const e of events) {
          count(e)
          pending += `${copyText(e.guildId)}\t${copyText(e.channelId)}\t${copyText(e.userId)}\t${copyText(e.username)}\t${e.type}\t${e.createdAt}\n`
          if (pending.length > 256 * 1024) {
            if (failed) throw failed
            const ok = copy.write(pending)
            pending = ''
            if (!ok) await Promise.race([once(copy, 'drain'), once(copy, 'error')])
          }
        }
      } catch (err) {
        copy.destroy()
        throw err
      }
      if (pending) copy.write(pending)
      copy.end()
      await once(copy, 'finish')
      if (failed) throw failed
    } else {
      let batch: ActivityEvent[] = []
      const flush = async () => {
        if (!batch.length) return
        await client.query(`INSERT INTO activity_load (guild_id, channel_id, user_id, username, type, created_at)
          SELECT "guildId", "channelId", "userId", username, type, "createdAt"::timestamptz FROM json_to_recordset($1::json)
          AS e("guildId" text, "channelId" text, "userId" text, username text, type text, "createdAt" text)`, [JSON.stringify(batch)])
        batch = []
      }
      for await (const e of events) {
        count(e)
        batch.push(e)
        if (batch.length >= 2000) await flush()
      }
      await flush()
    }
    options.onProgress?.(n)
    await client.query("SET LOCAL work_mem = '256MB'")
    // Sorted like the (guild_id, created_at) index, so its inserts land on neighbouring pages.
    await client.query('INSERT INTO activity_events SELECT * FROM activity_load ORDER BY guild_id, created_at')
    // Per user and UTC day, with the username of the day's latest event.
    await client.query(`
      CREATE TEMP TABLE load_daily ON COMMIT DROP AS
      SELECT guild_id, user_id, (created_at AT TIME ZONE 'UTC')::date AS day,
             count(*) FILTER (WHERE type = 'typing') AS t, count(*) FILTER (WHERE type = 'message') AS m,
             max(created_at) AS last_at, (array_agg(username ORDER BY created_at DESC))[1] AS username
      FROM activity_load GROUP BY 1, 2, 3`)
    await client.query(`
      INSERT INTO activity_daily (guild_id, user_id, day, typing_count, message_count)
      SELECT guild_id, user_id, day, t, m FROM load_daily ORDER BY guild_id, day, user_id
      ON CONFLICT (guild_id, day, user_id) DO UPDATE SET
        typing_count = activity_daily.typing_count + EXCLUDED.typing_count,
        message_count = activity_daily.message_count + EXCLUDED.message_count`)
    await client.query(`
      INSERT INTO activity_totals (guild_id, user_id, typing_count, message_count, username, last_seen_at)
      SELECT guild_id, user_id, sum(t), sum(m), (array_agg(username ORDER BY last_at DESC))[1], max(last_at)
      FROM load_daily GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (guild_id, user_id) DO UPDATE SET
        typing_count = activity_totals.typing_count + EXCLUDED.typing_count,
        message_count = activity_totals.message_count + EXCLUDED.message_count,
        username = CASE WHEN EXCLUDED.last_seen_at >= activity_totals.last_seen_at THEN EXCLUDED.username ELSE activity_totals.username END,
        last_seen_at = greatest(activity_totals.last_seen_at, EXCLUDED.last_seen_at)`)
    const { rows } = await client.query<{ guilds: number; users: number; days: number }>(
      'SELECT count(DISTINCT guild_id)::int AS guilds, count(DISTINCT user_id)::int AS users, count(DISTINCT day)::int AS days FROM load_daily')
    await client.query('COMMIT')
    client.release()
    if (handle.kind === 'postgres') await handle.pool.query('ANALYZE activity_daily; ANALYZE activity_totals').catch(() => {})
    return { events: n, typing, messages: n - typing, ...rows[0], seconds: (performance.now() - started) / 1000 }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    client.release()
    throw err
  }
}
