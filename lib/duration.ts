import { parse } from '@lukeed/ms'

/**
 * The one reading of a duration setting: milliseconds as digits ("60000") or an ms-style duration
 * ("15m", "7d", "1 minute", "30s"), the same parser @fastify/rate-limit and @fastify/jwt use; null when
 * it is neither or not positive.
 */
export function durationMs (value: string): number | null {
  const trimmed = value.trim()
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) : parse(trimmed)
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? Math.trunc(ms) : null
}

/** durationMs for a named setting that must hold one: the value, or a thrown configuration error. */
export function requiredDurationMs (name: string, value: string): number {
  const ms = durationMs(value)
  if (ms === null) throw new Error(`invalid configuration: ${name} is not a duration (got ${JSON.stringify(value)}; use forms like 15m, 7d, 1 minute, 60000)`)
  return ms
}
