import type { Kysely } from 'kysely'
import type { Redis } from 'ioredis'
import type { Database } from '../../db/types.ts'
import { ChangeFeed } from '../change-feed.ts'
import { LruCache } from '../lru.ts'

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
export class ProfileCache<V> {
  readonly #lru: LruCache<{ value: V; at: number }>
  readonly #inflight = new Map<string, Promise<V | undefined>>()
  readonly #feed: ChangeFeed
  #generation = 0

  constructor(private readonly opts: ProfileCacheOptions<V>) {
    this.#lru = new LruCache(opts.maxEntries)
    this.#feed = new ChangeFeed({
      db: opts.db, table: 'users', column: 'updated_at', pollMs: opts.pollMs, since: new Date(),
      redis: opts.redis, channel: PROFILE_CHANNEL, onChange: (id) => this.invalidate(id), onError: opts.onError
    })
  }

  /** The cached profile if it is there and fresh, without waiting for anything. */
  peek(userId: string): V | undefined {
    const hit = this.#lru.get(userId)
    return hit && Date.now() - hit.at < this.opts.ttlMs ? hit.value : undefined
  }

  get(userId: string): Promise<V | undefined> {
    const hit = this.peek(userId)
    if (hit !== undefined) return Promise.resolve(hit)
    // Concurrent misses for one user share one load.
    let pending = this.#inflight.get(userId)
    if (!pending) {
      const generation = this.#generation
      const load: Promise<V | undefined> = this.opts.load(userId).then((value) => {
        if (value !== undefined && generation === this.#generation) this.#lru.set(userId, { value, at: Date.now() })
        return value
      }).finally(() => {
        if (this.#inflight.get(userId) === load) this.#inflight.delete(userId)
      })
      this.#inflight.set(userId, load)
      pending = load
    }
    return pending
  }

  invalidate(userId: string): void {
    this.#generation++
    this.#lru.delete(userId)
    this.#inflight.delete(userId)
  }

  // This instance changed the user: drop it here and tell the other instances.
  async changed(userId: string): Promise<void> {
    this.invalidate(userId)
    await this.#feed.publish(userId)
  }

  get size(): number {
    return this.#lru.size
  }

  start(): Promise<void> {
    return this.#feed.start()
  }

  stop(): Promise<void> {
    return this.#feed.stop()
  }
}
