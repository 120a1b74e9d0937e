import { LRUCache } from 'lru-cache'

export interface ProfileCacheOptions<V> {
  load: (userId: string) => Promise<V | undefined>
  maxEntries: number
  // The longest an entry is served: bounds staleness after an edit the change bus does not see (a
  // guild list changed by hand).
  ttlMs: number
}

/**
 * Users with their guild lists, kept in memory so that `GET /api/auth/me` needs no database round trip.
 * The auth plugin drops an entry when the change bus says the user was written, by any instance or
 * command. A load that races an invalidation is served but not kept, so an entry is never older than
 * the last invalidation.
 */
export class ProfileCache<V extends object> {
  readonly #lru: LRUCache<string, V>

  constructor (opts: ProfileCacheOptions<V>) {
    this.#lru = new LRUCache<string, V>({
      max: Math.max(1, opts.maxEntries),
      ttl: opts.ttlMs,
      // A user written while the load ran is served but not kept (the invalidation aborted it).
      ignoreFetchAbort: true,
      // Concurrent misses for one user share one load.
      fetchMethod: (userId) => opts.load(userId)
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

  get size (): number {
    return this.#lru.size
  }
}
