import { createHash, randomBytes } from 'node:crypto'

// Keys read `gak_` then 43 URL-safe characters (256 random bits).
export const API_KEY_PREFIX = 'gak_'
const SHAPE = /^gak_[A-Za-z0-9_-]{43}$/

/** A new API key: URL-safe characters only, shown once and stored hashed. */
export const generateApiKey = (): string => `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`

/** What is stored of a key: its SHA-256, hex. A key has 256 random bits, so no slow hash is needed. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex')

/** Whether a header value has the shape of a key (anything else is refused without a lookup). */
export const looksLikeApiKey = (value: string): boolean => SHAPE.test(value)

/** The characters a listing shows to tell keys apart. */
export const apiKeyPrefix = (key: string): string => key.slice(0, API_KEY_PREFIX.length + 6)

/** A comma list of guild ids, each 1..64 characters: the list, or the message of the mistake. */
export function parseGuildList (text: string): string[] | string {
  const guilds = [...new Set(text.split(',').map((g) => g.trim()))]
  if (guilds.length === 0 || guilds.some((g) => g.length === 0 || g.length > 64)) return 'the guilds must be a comma list of guild ids (1 to 64 characters each)'
  return guilds
}
