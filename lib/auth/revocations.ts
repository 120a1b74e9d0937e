import type { Kysely } from 'kysely'
import type { Redis } from 'ioredis'
import type { Database } from '../../db/types.ts'
import { ChangeFeed } from '../change-feed.ts'

/**
 * The set of revoked session ids that bearer checks consult with no database round trip.
 * An access token outlives its session's revocation by at most its own lifetime, so entries older
 * than that are dropped. The set is kept current by this instance's own revocations, by a poll of
 * the database (other instances sharing it), and, with Redis, by a pub/sub message at once.
 */
export class RevocationList {
  #revoked = new Map<string, number>()
  readonly #feed: ChangeFeed
  private readonly accessTtlMs: number

  constructor (
    db: Kysely<Database>,
    accessTtlMs: number,
    pollMs: number,
    redis: Redis | null,
    onError: (err: unknown) => void
  ) {
    this.accessTtlMs = accessTtlMs
    this.#feed = new ChangeFeed({
      db,
      table: 'sessions',
      column: 'revoked_at',
      pollMs,
      since: new Date(Date.now() - accessTtlMs),
      redis,
      channel: 'session-revoked',
      onChange: (id, at) => this.add(id, at),
      onPolled: () => this.#prune(),
      onError
    })
  }

  has (sessionId: string): boolean {
    return this.#revoked.has(sessionId)
  }

  get size (): number {
    return this.#revoked.size
  }

  add (sessionId: string, at = Date.now()): void {
    this.#revoked.set(sessionId, at)
  }

  // Marks a session revoked here and tells the other instances.
  async announce (sessionId: string): Promise<void> {
    this.add(sessionId)
    await this.#feed.publish(sessionId)
  }

  #prune (): void {
    const horizon = Date.now() - this.accessTtlMs - 60_000
    for (const [id, at] of this.#revoked) if (at < horizon) this.#revoked.delete(id)
  }

  async start (): Promise<void> {
    await this.#feed.start()
  }

  async stop (): Promise<void> {
    await this.#feed.stop()
  }
}
