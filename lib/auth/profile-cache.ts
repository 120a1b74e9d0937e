import type { Kysely } from 'kysely'
import type { Redis } from 'ioredis'
import type { Database } from '../../db/types.ts'
import { ChangeFeed } from '../change-feed.ts'
import { LRUCache } from 'lru-cache'

export const PROFILE_CHANNEL = 'user-changed'

export interface ProfileCacheOptions<V> {
  db: Kysely<Database>
  load: (userId: string) => Promise<V | undefined>
  maxEntries: number
  // The longest an entry is served: bounds staleness after an edit that bypasses updated_at.
  ttlMs: number
  pollMs: number
  redis: Redis | null
  onError: (err: unknown) => void
}

/**
 * Users with their guild lists, kept in memory so that `GET /api/auth/me` needs no database round trip.
 * Every write the server and the CLIs make to a user sets `users.updated_at`; an entry is dropped when
 * this instance writes the user, when the poll of `updated_at` sees another instance's (or a CLI's)
 * write, and at once when that write is published on Redis. A load that races an invalidation is
 * served but not kept, so an entry is never older than the last invalidation.
 */
export class ProfileCache<V extends object> {
  readonly #lru: LRUCache<string, V>
  readonly #feed: ChangeFeed

  constructor (opts: ProfileCacheOptions<V>) {
    this.#lru = new LRUCache<string, V>({
      max: Math.max(1, opts.maxEntries),
      ttl: opts.ttlMs,
      // A user written while the load ran is served but not kept (the invalidation aborted it).
      ignoreFetchAbort: true,
      // Concurrent misses for one user share one load.
      fetchMethod: (userId) => opts.load(userId)
    })
    this.#feed = new ChangeFeed({
      db: opts.db,
      table: 'users',
      column: 'updated_at',
      pollMs: opts.pollMs,
      since: new Date(),
      redis: opts.redis,
      channel: PROFILE_CHANNEL,
      onChange: (id) => this.invalidate(id),
      onError: opts.onError
    })
  }

  /** The cached profile if it is there and fresh, without waiting for anything. */
  peek (userId: string): V | undefined {
    return this.#lru.get(userId)
  }

  get (userId: string): Promise<V | undefined> {
    return this.#lru.fetch(userId)
  }

  invalidate (userId: string): void {
    this.#lru.delete(userId)
  }

  // This instance changed the user: drop it here and tell the other instances.
  async changed (userId: string): Promise<void> {
    this.invalidate(userId)
    await this.#feed.publish(userId)
  }

  get size (): number {
    return this.#lru.size
  }

  start (): Promise<void> {
    return this.#feed.start()
  }

  stop (): Promise<void> {
    return this.#feed.stop()
  }
}
