import { parseInstant } from './instant.ts'

// toISOString()'s shape (YYYY-MM-DDTHH:MM:SS.sssZ), checked by its separators; PostgreSQL checks the digits.
export const isCanonical = (s: string) => s.length === 24 && s.charCodeAt(23) === 90 && s.charCodeAt(10) === 84 &&
  s.charCodeAt(19) === 46 && s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 && s.charCodeAt(13) === 58 && s.charCodeAt(16) === 58

// The loader's form of createdAt: strings then sort like the instants and slice to their UTC day.
export function canonicalInstant (createdAt: string): string {
  if (isCanonical(createdAt)) return createdAt
  const ms = typeof createdAt === 'string' ? parseInstant(createdAt, { requireZone: true, allowDateOnly: false }) : null
  if (ms === null) throw new Error(`invalid createdAt: ${JSON.stringify(createdAt)}`)
  return new Date(ms).toISOString()
}
