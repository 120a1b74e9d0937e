import type { Redis } from 'ioredis'
import { addressGroup } from '../address-group.ts'

export interface SigninGuardSettings {
  // Sign-in attempts of one IP that may fail within the window before it is blocked.
  maxFailures: number
  // Failures are forgotten this long after an IP's last attempt.
  windowMs: number
  // The first block; each later block of the same IP doubles it, up to maxBlockMs.
  blockMs: number
  maxBlockMs: number
  // Blocks are forgotten (the next one is the first again) this long after the last.
  blockMemoryMs: number
}

/**
 * Per-client sign-in throttling, a client being an IPv4 address or an IPv6 /64 (lib/address-group.ts,
 * as the rate limiter counts them). An attempt is counted as a failure before the provider is called, in one
 * atomic step with the check, so concurrent attempts cannot all slip under the threshold; an attempt
 * that succeeds (or that failed through no fault of the client) takes back its own count only, so a
 * success never erases the failures of others behind the same address.
 */
export interface SigninGuard {
  // Counts an attempt: 0 when it may go ahead, or the milliseconds the IP must still wait.
  begin(ip: string): Promise<number>
  // Takes back one attempt counted by begin().
  release(ip: string): Promise<void>
}

/** The length of an IP's nth block (1-based): blockMs, doubling, at most maxBlockMs. */
export function blockDuration (nth: number, s: SigninGuardSettings): number {
  return Math.min(s.blockMs * 2 ** Math.min(nth - 1, 30), s.maxBlockMs)
}

interface Entry { attempts: number; lastAttempt: number; blocks: number; lastBlock: number; blockedUntil: number }

// Addresses (IPv6 /64s) the in-process guard remembers; past it the pruning below makes room.
export const GUARD_ENTRIES = 100_000

export class MemorySigninGuard implements SigninGuard {
  // By address group, least recently attempted first (an attempt moves its entry to the end).
  #entries = new Map<string, Entry>()
  private readonly settings: SigninGuardSettings
  private readonly maxEntries: number
  constructor (settings: SigninGuardSettings, maxEntries = GUARD_ENTRIES) {
    this.settings = settings
    this.maxEntries = maxEntries
  }

  get size (): number {
    return this.#entries.size
  }

  async begin (ip: string): Promise<number> {
    const now = Date.now()
    const s = this.settings
    const key = addressGroup(ip)
    let e = this.#entries.get(key)
    if (e) {
      this.#entries.delete(key)
    } else {
      e = { attempts: 0, lastAttempt: 0, blocks: 0, lastBlock: 0, blockedUntil: 0 }
      if (this.#entries.size >= this.maxEntries) this.#prune(now)
    }
    this.#entries.set(key, e)
    if (e.blockedUntil > now) return e.blockedUntil - now
    if (now - e.lastAttempt > s.windowMs) e.attempts = 0
    if (now - e.lastBlock > s.blockMemoryMs) e.blocks = 0
    e.lastAttempt = now
    if (e.attempts >= s.maxFailures) {
      e.blocks++
      e.lastBlock = now
      e.attempts = 0
      e.blockedUntil = now + blockDuration(e.blocks, s)
      return e.blockedUntil - now
    }
    e.attempts++
    return 0
  }

  async release (ip: string): Promise<void> {
    const e = this.#entries.get(addressGroup(ip))
    if (e && e.attempts > 0) e.attempts--
  }

  /**
   * Makes room for at least a tenth of the table at once, so that a walk over it (linear) comes at most
   * once per maxEntries / 10 new addresses: first the entries with nothing left to remember, then the
   * least recently attempted that are not blocked, then (a table full of blocks) the least recently
   * attempted of all.
   */
  #prune (now: number): void {
    const s = this.settings
    const target = this.maxEntries - Math.max(1, Math.floor(this.maxEntries / 10))
    for (const [key, e] of this.#entries) {
      if (e.blockedUntil < now && now - e.lastAttempt > s.windowMs && now - e.lastBlock > s.blockMemoryMs) this.#entries.delete(key)
    }
    for (const [key, e] of this.#entries) {
      if (this.#entries.size <= target) return
      if (e.blockedUntil <= now) this.#entries.delete(key)
    }
    for (const key of this.#entries.keys()) {
      if (this.#entries.size <= target) return
      this.#entries.delete(key)
    }
  }
}

// The same rule as MemorySigninGuard.begin, run inside Redis so that it is one step for every instance.
// KEYS[1] the IP's hash; ARGV: now, maxFailures, windowMs, blockMs, maxBlockMs, blockMemoryMs.
const BEGIN_SCRIPT = `
local now = tonumber(ARGV[1])
local maxFailures, windowMs, blockMs, maxBlockMs, memoryMs = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local v = redis.call('HMGET', KEYS[1], 'attempts', 'lastAttempt', 'blocks', 'lastBlock', 'blockedUntil')
local attempts, lastAttempt, blocks, lastBlock, blockedUntil = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0, tonumber(v[5]) or 0
if blockedUntil > now then return blockedUntil - now end
if now - lastAttempt > windowMs then attempts = 0 end
if now - lastBlock > memoryMs then blocks = 0 end
local wait = 0
if attempts >= maxFailures then
  blocks = blocks + 1
  lastBlock = now
  attempts = 0
  wait = math.min(blockMs * 2 ^ math.min(blocks - 1, 30), maxBlockMs)
  blockedUntil = now + wait
else
  attempts = attempts + 1
end
redis.call('HSET', KEYS[1], 'attempts', attempts, 'lastAttempt', now, 'blocks', blocks, 'lastBlock', lastBlock, 'blockedUntil', blockedUntil)
redis.call('PEXPIRE', KEYS[1], math.max(windowMs, memoryMs) + wait)
return wait
`

// Takes back one attempt, never below zero.
const RELEASE_SCRIPT = `
local attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '0') or 0
if attempts > 0 then redis.call('HSET', KEYS[1], 'attempts', attempts - 1) end
return 0
`

/** The same rule kept in Redis so that every instance sees the same counts and blocks. */
export class RedisSigninGuard implements SigninGuard {
  private readonly redis: Redis
  private readonly settings: SigninGuardSettings
  private readonly fallback: SigninGuard
  constructor (redis: Redis, settings: SigninGuardSettings, fallback: SigninGuard) {
    this.redis = redis
    this.settings = settings
    this.fallback = fallback
  }

  // One hash per address group: an IPv6 client's whole /64 (signin:2001:db8:1:2::).
  #key (ip: string) {
    return `signin:${addressGroup(ip)}`
  }

  async begin (ip: string): Promise<number> {
    const s = this.settings
    try {
      const wait = await this.redis.eval(BEGIN_SCRIPT, 1, this.#key(ip), Date.now(), s.maxFailures, s.windowMs, s.blockMs, s.maxBlockMs, s.blockMemoryMs)
      return Number(wait)
    } catch {
      // Redis away: this instance's own count stands in.
      return this.fallback.begin(ip)
    }
  }

  async release (ip: string): Promise<void> {
    try {
      await this.redis.eval(RELEASE_SCRIPT, 1, this.#key(ip))
    } catch {
      await this.fallback.release(ip)
    }
  }
}
