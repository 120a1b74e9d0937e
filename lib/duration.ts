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

const UNITS: [number, string][] = [[86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1000, 'second'], [1, 'millisecond']]

/** A duration in words, exactly: in the largest unit that divides it ("5 minutes", "90 seconds"). */
export function describeDuration (ms: number): string {
  const [size, unit] = UNITS.find(([size]) => ms % size === 0)!
  const n = ms / size
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}
