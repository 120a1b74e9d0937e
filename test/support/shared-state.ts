import { Redis } from 'ioredis'

export const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const redisMissing = `Redis is not reachable at ${redisUrl}; start it: redis-server --daemonize yes --port 6379 --save "" --appendonly no`

// Polls until check holds; answers the milliseconds it took, or -1 after ms.
export async function until (check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < ms) {
    if (await check()) return Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return -1
}

export async function redisReachable (): Promise<boolean> {
  const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  try {
    await probe.connect()
    await probe.ping()
    return true
  } catch {
    return false
  } finally {
    probe.disconnect()
  }
}
