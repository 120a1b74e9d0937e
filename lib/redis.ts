import { Redis, type RedisOptions } from 'ioredis'

/**
 * A Redis client that fails fast instead of queueing while Redis is away, so that requests keep being
 * served without it. `overrides` adjust it for other users (a CLI connects once and gives up).
 */
export function createRedis (url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 1000,
    commandTimeout: 500,
    // TCP keepalive from 10 s of silence on, beside the watchdog below.
    keepAlive: 10_000,
    retryStrategy: (attempt) => Math.min(attempt * 250, 2000),
    ...overrides
  })
}

/**
 * A Redis that stops answering without closing the connection (packets dropped) leaves ioredis
 * "ready", and every command would wait out its timeout. The watchdog pings every intervalMs; a ping
 * without an answer within timeoutMs drops the connection, so that ioredis reconnects and, while it
 * cannot, refuses commands at once (no offline queue): callers skip Redis instead of waiting on it.
 * Returns a function that stops the watchdog.
 */
export function watchRedis (client: Redis, intervalMs: number, timeoutMs: number): () => void {
  let probing = false
  const timer = setInterval(() => {
    if (probing || client.status !== 'ready') return
    probing = true
    const deadline = setTimeout(() => client.disconnect(true), timeoutMs)
    client.ping()
      .catch(() => {})
      .finally(() => {
        probing = false
        clearTimeout(deadline)
      })
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
