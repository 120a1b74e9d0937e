// The two counter stores @fastify/rate-limit ships (store/LocalStore.js, store/RedisStore.js), which
// the instance's fallback store combines.
interface RateLimitResult { current: number; ttl: number }
interface RateLimitStore {
  incr(key: string, callback: (err: Error | null, result?: RateLimitResult) => void, timeWindow: number, max: number): void
  // The counter as it stands, not counting this call (@fastify/rate-limit's `{ increment: false }`).
  read(key: string, callback: (err: Error | null, result?: RateLimitResult) => void, timeWindow: number, max: number): void
  child(routeOptions: unknown): RateLimitStore
}

declare module '@fastify/rate-limit/store/LocalStore.js' {
  const LocalStore: new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => RateLimitStore
  export default LocalStore
}

declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { Redis } from 'ioredis'
  const RedisStore: new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key?: string) => RateLimitStore
  export default RedisStore
}
