import { Redis, type RedisOptions } from 'ioredis'

/**
 * A Redis client that fails fast instead of queueing while Redis is away, so that requests keep being
 * served without it. `overrides` adjust it for other users (a CLI connects once and gives up).
 */
export function createRedis(url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 1000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(attempt * 250, 2000),
    ...overrides
  })
}
