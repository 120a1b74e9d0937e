import type { Redis } from 'ioredis'

export interface SigninGuardSettings {
  maxFailures: number
  windowMs: number
  blockMs: number
  maxBlockMs: number
}

export interface SigninGuard {
  // Milliseconds the IP must still wait, or 0.
  blockedFor(ip: string): Promise<number>
  // Records a failure; returns the block it caused (ms), or 0.
  recordFailure(ip: string): Promise<number>
  recordSuccess(ip: string): Promise<void>
}

// Blocks double with every failure past the threshold: base, 2×base, 4×base … up to the cap.
export function blockDuration(failures: number, s: SigninGuardSettings): number {
  if (failures < s.maxFailures) return 0
  return Math.min(s.blockMs * 2 ** (failures - s.maxFailures), s.maxBlockMs)
}

interface Entry { failures: number; lastFailure: number; blockedUntil: number }

export class MemorySigninGuard implements SigninGuard {
  #entries = new Map<string, Entry>()
  constructor(private readonly settings: SigninGuardSettings) {}

  async blockedFor(ip: string): Promise<number> {
    const e = this.#entries.get(ip)
    return e ? Math.max(0, e.blockedUntil - Date.now()) : 0
  }

  async recordFailure(ip: string): Promise<number> {
    const now = Date.now()
    let e = this.#entries.get(ip)
    // The window runs from the last failure or the end of the last block, so blocks keep doubling.
    if (!e || now - Math.max(e.lastFailure, e.blockedUntil) > this.settings.windowMs) e = { failures: 0, lastFailure: now, blockedUntil: 0 }
    e.failures++
    e.lastFailure = now
    const block = blockDuration(e.failures, this.settings)
    if (block) e.blockedUntil = now + block
    this.#entries.set(ip, e)
    if (this.#entries.size > 100_000) this.#prune(now)
    return block
  }

  async recordSuccess(ip: string): Promise<void> {
    this.#entries.delete(ip)
  }

  #prune(now: number): void {
    for (const [ip, e] of this.#entries) {
      if (now - Math.max(e.lastFailure, e.blockedUntil) > this.settings.windowMs) this.#entries.delete(ip)
    }
  }
}

/** The same rule kept in Redis so that every instance sees the same counts and blocks. */
export class RedisSigninGuard implements SigninGuard {
  constructor(private readonly redis: Redis, private readonly settings: SigninGuardSettings, private readonly fallback: SigninGuard) {}

  #key(ip: string) {
    return `signin:${ip}`
  }

  async blockedFor(ip: string): Promise<number> {
    try {
      const until = Number(await this.redis.hget(this.#key(ip), 'blockedUntil'))
      return Number.isFinite(until) ? Math.max(0, until - Date.now()) : 0
    } catch {
      return this.fallback.blockedFor(ip)
    }
  }

  async recordFailure(ip: string): Promise<number> {
    const key = this.#key(ip)
    try {
      const failures = await this.redis.hincrby(key, 'failures', 1)
      const block = blockDuration(failures, this.settings)
      const multi = this.redis.multi()
      if (block) multi.hset(key, 'blockedUntil', String(Date.now() + block))
      // The counter lives for a window after the last failure, counted from the end of any block.
      multi.pexpire(key, this.settings.windowMs + block)
      await multi.exec()
      return block
    } catch {
      return this.fallback.recordFailure(ip)
    }
  }

  async recordSuccess(ip: string): Promise<void> {
    await this.redis.del(this.#key(ip)).catch(() => {})
    await this.fallback.recordSuccess(ip)
  }
}
