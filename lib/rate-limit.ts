import { parse } from '@lukeed/ms'
import type { Redis } from 'ioredis'

/** A window given in milliseconds ("60000") or as an ms-style duration ("1 minute", "30s"); null if neither. */
export function windowMs(value: string): number | null {
  const ms = /^\d+$/.test(value.trim()) ? Number(value) : parse(value)
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? Math.trunc(ms) : null
}

/** A key's count in the current fixed window and the milliseconds until that window ends. */
export interface Hit { count: number; ttlMs: number }

/**
 * Fixed-window counters in this process. Expired windows are swept once per longest window seen, so
 * memory follows the clients of the last window.
 */
export class LocalCounters {
  #windows = new Map<string, { count: number; resetAt: number }>()
  #sweep: NodeJS.Timeout | undefined
  #sweepMs = 0

  hit(key: string, windowMs: number): Hit {
    const now = Date.now()
    let w = this.#windows.get(key)
    if (w === undefined || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs }
      this.#windows.set(key, w)
      if (windowMs > this.#sweepMs) this.#schedule(windowMs)
    }
    w.count++
    return { count: w.count, ttlMs: w.resetAt - now }
  }

  #schedule(ms: number): void {
    this.#sweepMs = ms
    clearInterval(this.#sweep)
    this.#sweep = setInterval(() => {
      const now = Date.now()
      for (const [key, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(key)
    }, ms)
    this.#sweep.unref()
  }

  get size(): number {
    return this.#windows.size
  }

  close(): void {
    clearInterval(this.#sweep)
  }
}

// INCR, and start the window's expiry on its first hit (or if the key somehow lost it).
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`

/** Fixed-window counters in Redis, shared by every instance; one round trip per request. */
export class RedisCounters {
  readonly #redis: Redis & { rateLimitHit?: (key: string, windowMs: number) => Promise<[number, number]> }

  constructor(redis: Redis, private readonly prefix: string) {
    this.#redis = redis
    // A defined command runs by EVALSHA, sending the script itself only once per connection.
    if (!this.#redis.rateLimitHit) redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
  }

  async hit(key: string, windowMs: number): Promise<Hit> {
    const [count, ttlMs] = await this.#redis.rateLimitHit!(this.prefix + key, windowMs)
    return { count, ttlMs }
  }
}
