import type { SchemaOptions, Static, TSchema } from '@sinclair/typebox'
import { Type } from '../lib/typebox.ts'
import { STATUS_CODES } from 'node:http'

/**
 * The body of every error answer. Registered as a shared schema (see sharedSchemas in
 * schemas/components.ts), so the OpenAPI document defines it once, in components.schemas.
 */
export const ErrorResponse = Type.Object({
  error: Type.String({ description: 'HTTP reason phrase of the status', examples: ['Not Found'] }),
  message: Type.String({ description: 'What went wrong, in words', examples: ['Placemark 999999 not found'] })
}, { $id: 'Error', title: 'Error', description: 'The body of every error answer: the reason phrase and a message', additionalProperties: false })

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/**
 * A reference to a shared schema (one with an `$id`, registered with app.addSchema): it validates,
 * serializes and types as that schema, and the OpenAPI document shows it as a `$ref` into
 * components.schemas. Options such as `description` describe the place that refers to it.
 */
export function ref<T extends TSchema> (schema: T, options: SchemaOptions = {}) {
  if (!schema.$id) throw new Error('ref() needs a schema with an $id')
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id, options))
}

/** A documented response header: an OpenAPI header object's schema with its description. */
export interface HeaderDoc { type: 'string' | 'integer'; description: string; format?: string; example?: unknown }
export type Headers = Record<string, HeaderDoc>

export const rateLimitHeaders: Headers = {
  'x-ratelimit-limit': { type: 'integer', description: 'Requests allowed per window for this client IP', example: 600 },
  'x-ratelimit-remaining': { type: 'integer', description: 'Requests left in the current window', example: 0 },
  'x-ratelimit-reset': { type: 'integer', description: 'Seconds until the current window ends', example: 42 }
}
export const retryAfter: Headers = {
  'retry-after': { type: 'integer', description: 'Seconds to wait before trying again', example: 42 }
}

/**
 * The headers of an answer kept by the dataset cache (every GET below /api/v1 but the box query):
 * a repeated request with `If-None-Match` set to the tag answers 304 without a body.
 */
export const etagHeaders: Headers = {
  etag: { type: 'string', description: 'Tag of this answer for this dataset version; send it back in `If-None-Match` to get 304 while it is current', example: '"1-Vn3ckqPq0mNnZ9x2y5n1Aw"' },
  'cache-control': { type: 'string', description: 'Always `public, max-age=0, must-revalidate`: keep the answer, revalidate it with its ETag', example: 'public, max-age=0, must-revalidate' }
}

/** The 304 answer of a cached route: the tag sent in `If-None-Match` is still current. */
export const notModified = {
  description: 'Not modified: the `If-None-Match` tag is the current one (the dataset has not changed); no body',
  type: 'null',
  headers: etagHeaders
} as const

/** One error status of a route: what it means there, and messages this route really answers with it. */
export interface ErrorCase {
  status: number
  description: string
  messages: string[]
  headers?: Headers
}

/** An error status with its meaning on this route and at least one message the route answers with it. */
export function fail (status: number, description: string, ...messages: [string, ...string[]]): ErrorCase {
  return { status, description, messages }
}

// Statuses that mean the same on every route that lists them.
const standard: Record<number, ErrorCase> = {
  401: fail(401, 'Bearer token missing or invalid (expired, forged, or its session revoked)', 'Missing authorization header', 'Invalid token', 'Token expired'),
  429: {
    ...fail(429, 'Too many requests from this client IP in the current window (RATE_LIMIT_MAX, or AUTH_RATE_LIMIT_MAX under /api/auth)', 'Rate limit exceeded'),
    headers: { ...rateLimitHeaders, ...retryAfter }
  },
  503: {
    ...fail(503, 'The database did not answer in time, or the instance is overloaded; try again after `retry-after` seconds', 'The database is unavailable; try again shortly'),
    headers: retryAfter
  }
}

/** The OpenAPI response of one error status: the shared Error schema with this route's own examples. */
function errorResponse (c: ErrorCase) {
  const error = STATUS_CODES[c.status] ?? 'Error'
  const examples = Object.fromEntries(c.messages.map((message) => [message, { value: { error, message } }]))
  return {
    description: c.description,
    ...(c.headers ? { headers: c.headers } : {}),
    content: { 'application/json': { schema: ref(ErrorResponse), examples } }
  }
}

export type ErrorResponseDoc = ReturnType<typeof errorResponse>

/**
 * The error entries of a route's `response` schema, so each route lists exactly the statuses it can
 * answer, each with its meaning and example messages. 401, 429 and 503 have standard ones; any other
 * status needs fail(status, description, ...messages).
 */
export function errors (...cases: (number | ErrorCase)[]): Record<number, ErrorResponseDoc> {
  const out: Record<number, ErrorResponseDoc> = {}
  for (const c of cases) {
    // A bare status without a standard meaning documents only its reason phrase, with no example: the
    // document's tests refuse that, so it gets its fail(...) before it ships.
    const found = typeof c === 'number' ? standard[c] ?? { status: c, description: STATUS_CODES[c] ?? 'Error', messages: [] } : c
    out[found.status] = errorResponse(found)
  }
  return out
}

/** A success response: its schema, what it means in words, and the headers it carries. */
export function answer<T extends TSchema> (schema: T, description: string, headers?: Headers): T {
  return { ...schema, description, ...(headers ? { headers } : {}) }
}
