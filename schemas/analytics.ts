import type { TProperties } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { errors, fail, Nullable } from './common.ts'

export const GUILD_EXAMPLE = '700000000000000001'

// The window's examples are the 30 days up to the end of the day the server started: the demo activity of
// the sample data ends at the embedded database's first start, so a fixed date would fall outside it and
// "Try it out" on the docs page would answer nothing. (Computed once, when the process starts.)
const DAY_MS = 86_400_000
const startDay = Math.floor(Date.now() / DAY_MS) * DAY_MS
export const SINCE_EXAMPLE = new Date(startDay - 30 * DAY_MS).toISOString()
export const UNTIL_EXAMPLE = new Date(startDay + DAY_MS).toISOString()

// The query parameters every analytics route takes.
export const windowParams = {
  guildId: Type.String({ minLength: 1, maxLength: 64, description: 'Guild id at the identity provider', examples: [GUILD_EXAMPLE] }),
  since: Type.Optional(Type.String({ maxLength: 64, description: 'Start of the window, inclusive (ISO 8601; no zone: UTC; a date: its midnight UTC)', examples: [SINCE_EXAMPLE] })),
  until: Type.Optional(Type.String({ maxLength: 64, description: 'End of the window, exclusive (ISO 8601); default: now', examples: [UNTIL_EXAMPLE] })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'At most this many entries (1..1000, default 100)', examples: [20] }))
} satisfies TProperties

export const windowQuery = <T extends TProperties>(own: T) => Type.Object({ ...windowParams, ...own })

// The window echoed in every answer.
export const echo = {
  guildId: Type.String({ examples: [GUILD_EXAMPLE] }),
  since: Nullable(Type.String({ format: 'date-time', description: 'The effective start of the window (UTC); null when the window is open' })),
  until: Type.String({ format: 'date-time', description: 'The effective end of the window (UTC), exclusive' })
}

export const userId = Type.String({ description: 'User id at the identity provider', examples: ['800000000000004242'] })
export const username = Type.String({ description: 'Username of the member\'s latest event in the guild (same instant: the one stored last)', examples: ['quill42'] })

// The text shared by the analytics routes' descriptions.
export const commonRules = [
  '',
  '**Window:** `[since, until)`; `until` defaults to now, `since` to the beginning of the data%DEFAULT%; `since >= until` is 400.',
  '`since`/`until` are read like ghosts\' `since` (ISO 8601; a time without a zone is UTC; a date alone is its midnight UTC).',
  'Ratios are rounded to 4 decimals, half away from zero (a ratio over 0 is 0); ties are broken by `userId` compared byte by byte.',
  'An unknown guild, or a guild without events in the window, is an empty answer (200), not 404.',
  '',
  '**Permission:** role `ADMIN`, or owner / ADMINISTRATOR (0x8) / MANAGE_GUILD (0x20) of the guild per the guild list stored',
  'at sign-in; anyone else gets 403 `Insufficient permissions`.'
]

export const rules = (defaultSince = '') => commonRules.join('\n').replace('%DEFAULT%', defaultSince)

export const analyticsErrors = (...messages: string[]) => errors(
  fail(400, 'guildId is missing, or a parameter is malformed or out of range, or since >= until',
    'querystring must have required property \'guildId\'', 'querystring/since must be before until', ...messages),
  401,
  fail(403, 'The caller may not read this guild\'s analytics', 'Insufficient permissions'),
  429, 503)
