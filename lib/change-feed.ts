import { sql, type Kysely } from 'kysely'
import type { Redis } from 'ioredis'
import type { Database } from '../db/types.ts'
import { createRedis, watchRedis } from './redis.ts'

export interface ChangeFeedOptions {
  db: Kysely<Database>
  // The rows whose `column` (a timestamp) is at or after the last poll are the changes.
  table: 'sessions' | 'users'
  column: 'revoked_at' | 'updated_at'
  pollMs: number
  // Where the first poll starts.
  since: Date
  redis: Redis | null
  channel: string
  onChange: (id: string, at: number) => void
  // After every poll, for housekeeping.
  onPolled?: () => void
  onError: (err: unknown) => void
}

/**
 * Keeps an in-process view current with changes that other processes make to one table: a poll of
 * the rows changed since the previous poll and, with Redis, a pub/sub channel that brings a change at
 * once. The poll overlaps the previous one by two seconds of database time, so a change committed
 * while a poll ran is not missed; a change seen twice is harmless to every consumer.
 */
export class ChangeFeed {
  #since: Date
  #timer: NodeJS.Timeout | null = null
  #subscriber: Redis | null = null
  #unwatch: (() => void) | null = null

  private readonly opts: ChangeFeedOptions
  constructor (opts: ChangeFeedOptions) {
    this.opts = opts
    this.#since = opts.since
  }

  // Tells the other instances at once; they would otherwise notice at their next poll.
  async publish (id: string): Promise<void> {
    if (this.opts.redis) await this.opts.redis.publish(this.opts.channel, id).catch(this.opts.onError)
  }

  async poll (): Promise<void> {
    const { db, table, column } = this.opts
    const { rows } = await sql<{ id: string; at: Date; now: Date }>`
      SELECT id, ${sql.ref(column)} AS at, now() AS now FROM ${sql.table(table)} WHERE ${sql.ref(column)} >= ${this.#since}`.execute(db)
    for (const row of rows) this.opts.onChange(row.id, row.at.getTime())
    const dbNow = rows[0]?.now ?? (await sql<{ now: Date }>`SELECT now() AS now`.execute(db)).rows[0].now
    this.#since = new Date(dbNow.getTime() - 2000)
    this.opts.onPolled?.()
  }

  async start (): Promise<void> {
    await this.poll()
    this.#timer = setInterval(() => { this.poll().catch(this.opts.onError) }, this.opts.pollMs)
    this.#timer.unref()
    if (this.opts.redis) {
      const sub = this.opts.redis.duplicate({ enableOfflineQueue: true })
      sub.on('error', () => {})
      sub.on('message', (_channel: string, id: string) => this.opts.onChange(id, Date.now()))
      await sub.subscribe(this.opts.channel).catch(this.opts.onError)
      // A silent subscriber connection is replaced (ioredis subscribes again); the poll covers the gap.
      this.#unwatch = watchRedis(sub, 1000, 500)
      this.#subscriber = sub
    }
  }

  async stop (): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    this.#unwatch?.()
    if (this.#subscriber) await this.#subscriber.quit().catch(() => this.#subscriber?.disconnect())
  }
}

// Publishes one change from a process that keeps no feed of its own (a CLI), when REDIS_URL is set.
export async function publishChange (redisUrl: string | undefined, channel: string, id: string): Promise<boolean> {
  if (!redisUrl) return false
  const client = createRedis(redisUrl, { lazyConnect: true, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.publish(channel, id)
    return true
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}
