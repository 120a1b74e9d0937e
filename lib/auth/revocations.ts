import { sql, type Kysely } from 'kysely'
import type { Redis } from 'ioredis'
import type { Database } from '../../db/types.ts'

const CHANNEL = 'session-revoked'

/**
 * The set of revoked session ids that bearer checks consult with no database round trip.
 * An access token outlives its session's revocation by at most its own lifetime, so entries older
 * than that are dropped. The set is kept current by this instance's own revocations, by a poll of
 * the database (other instances sharing it), and, with Redis, by a pub/sub message at once.
 */
export class RevocationList {
  #revoked = new Map<string, number>()
  #since: Date
  #timer: NodeJS.Timeout | null = null
  #subscriber: Redis | null = null

  constructor(
    private readonly db: Kysely<Database>,
    private readonly accessTtlMs: number,
    private readonly pollMs: number,
    private readonly redis: Redis | null,
    private readonly onError: (err: unknown) => void
  ) {
    this.#since = new Date(Date.now() - accessTtlMs)
  }

  has(sessionId: string): boolean {
    return this.#revoked.has(sessionId)
  }

  get size(): number {
    return this.#revoked.size
  }

  add(sessionId: string, at = Date.now()): void {
    this.#revoked.set(sessionId, at)
  }

  // Marks a session revoked here and tells the other instances.
  async announce(sessionId: string): Promise<void> {
    this.add(sessionId)
    if (this.redis) await this.redis.publish(CHANNEL, sessionId).catch(this.onError)
  }

  async sync(): Promise<void> {
    const { rows } = await sql<{ id: string; revoked_at: Date; now: Date }>`
      SELECT id, revoked_at, now() AS now FROM sessions WHERE revoked_at >= ${this.#since}`.execute(this.db)
    for (const row of rows) this.add(row.id, row.revoked_at.getTime())
    // Overlap a little, so a revocation committed while this query ran is not missed.
    const dbNow = rows[0]?.now ?? (await sql<{ now: Date }>`SELECT now() AS now`.execute(this.db)).rows[0].now
    this.#since = new Date(dbNow.getTime() - 2000)
    const horizon = Date.now() - this.accessTtlMs - 60_000
    for (const [id, at] of this.#revoked) if (at < horizon) this.#revoked.delete(id)
  }

  async start(): Promise<void> {
    await this.sync()
    this.#timer = setInterval(() => { this.sync().catch(this.onError) }, this.pollMs)
    this.#timer.unref()
    if (this.redis) {
      const sub = this.redis.duplicate({ enableOfflineQueue: true })
      sub.on('error', () => {})
      sub.on('message', (_channel: string, id: string) => this.add(id))
      await sub.subscribe(CHANNEL).catch(this.onError)
      this.#subscriber = sub
    }
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    if (this.#subscriber) await this.#subscriber.quit().catch(() => this.#subscriber?.disconnect())
  }
}
