import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import pino from 'pino'
import type PinoPretty from 'pino-pretty'

// Query parameters that carry authorization codes, states, tokens or secrets; logs keep their names only.
const sensitiveNames = new Set(['code', 'state', 'token', 'access_token', 'refresh_token', 'refreshtoken', 'id_token', 'client_secret', 'secret', 'password'])

// A parameter name as the query parser will read it, however it was escaped: percent-escapes (even
// doubled), `+` for space, surrounding spaces and a trailing `[]`/`[key]` do not hide it.
function parameterName (raw: string): string {
  let name = raw.replace(/\+/g, ' ')
  for (let i = 0; i < 3 && name.includes('%'); i++) {
    try {
      name = decodeURIComponent(name)
    } catch {
      name = name.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    }
  }
  return name.trim().toLowerCase().replace(/\[.*$/, '')
}

/** The URL with the values of sensitive query parameters replaced by [REDACTED]. */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const parts = url.slice(q + 1).split('&')
  let changed = false
  for (let i = 0; i < parts.length; i++) {
    const eq = parts[i].indexOf('=')
    if (eq < 0) continue
    const name = parts[i].slice(0, eq)
    if (sensitiveNames.has(parameterName(name))) {
      parts[i] = `${name}=[REDACTED]`
      changed = true
    }
  }
  return changed ? `${url.slice(0, q + 1)}${parts.join('&')}` : url
}

export type LogFormat = 'json' | 'pretty'

/**
 * Readable lines for a person at a terminal outside production; JSON lines everywhere else (files, pipes,
 * log collectors). LOG_FORMAT=json|pretty decides when set.
 */
export function logFormat (env: NodeJS.ProcessEnv = process.env, isTTY = Boolean(process.stdout.isTTY)): LogFormat {
  if (env.LOG_FORMAT === 'json' || env.LOG_FORMAT === 'pretty') return env.LOG_FORMAT
  return isTTY && env.NODE_ENV !== 'production' ? 'pretty' : 'json'
}

// pino-pretty is loaded only when asked for: production never pays for it.
function prettyStream (): PinoPretty.PrettyStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
  // Synchronous, so that the last lines before process.exit are written; one line per entry.
  return pretty({ sync: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
}

// What one request may write to the log of its URL and Host: a client sending 16 KB of either does not
// make every log line 16 KB.
export const MAX_LOGGED_URL = 512
export const MAX_LOGGED_HOST = 256

/** The text cut to `max` characters, the cut marked with how much was left out. */
export function clip (text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length - max} more)`
}

// The redaction and serializers apply before either format writes a line.
export function loggerOptions (level: string, format: LogFormat = logFormat()): FastifyServerOptions['logger'] {
  return {
    level,
    ...(format === 'pretty' ? { stream: prettyStream() } : {}),
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]',
        'headers.authorization', 'headers.cookie',
        '*.accessToken', '*.refreshToken', '*.access_token', '*.refresh_token', '*.client_secret', '*.password', '*.secret',
        'accessToken', 'refreshToken', 'code'
      ],
      censor: '[REDACTED]'
    },
    serializers: {
      req (req: { method: string; url: string; hostname?: string; ip?: string; socket?: { remotePort?: number } }) {
        return { method: req.method, url: clip(redactUrl(req.url), MAX_LOGGED_URL), host: req.hostname === undefined ? undefined : clip(req.hostname, MAX_LOGGED_HOST), remoteAddress: req.ip }
      }
    }
  }
}

/**
 * The address a browser should open: PUBLIC_URL when it is set, otherwise the listening address, with a
 * wildcard or loopback host shown as localhost (the name the default PUBLIC_URL and the sign-in use).
 */
export function browserUrl (publicUrl: string | undefined, address: AddressInfo | string | null): string {
  if (publicUrl) return publicUrl.replace(/\/$/, '')
  if (address === null || typeof address === 'string') return 'http://localhost'
  const { address: host, port } = address
  const local = host === '0.0.0.0' || host === '::' || host === '127.0.0.1' || host === '::1' || host.startsWith('::ffff:127.')
  const name = local ? 'localhost' : host.includes(':') ? `[${host}]` : host
  return `http://${name}:${port}`
}

/** The start-up line: where the server answers, its API docs and, with the development provider, where to sign in. */
export function startupMessage (base: string, devIdp: boolean): string {
  const parts = [`serving on ${base}`, `docs ${base}/api/docs`]
  if (devIdp) parts.push(`sign in ${base}/api/auth/identity/login`)
  return parts.join(' — ')
}

const { chindingsSym } = pino.symbols

/**
 * Fastify's per-request child logger, made cheaply: the parent with the request id appended to its
 * bindings, as pino's own child() would append it. pino's child() runs every binding through the
 * redaction's wildcard paths (`*.accessToken`…), about 4 µs per request for a request id that never
 * holds a secret; the redaction still applies to everything logged through the child. A route with its
 * own log level or serializers gets a real pino child.
 */
export function requestChildLogger (logger: FastifyBaseLogger, bindings: Record<string, unknown>, opts: object): FastifyBaseLogger {
  const parent = logger as FastifyBaseLogger & { [chindingsSym]?: string }
  if (Object.keys(opts).length > 0 || typeof parent[chindingsSym] !== 'string') return logger.child(bindings, opts)
  let chindings = parent[chindingsSym]
  for (const key in bindings) {
    const value = bindings[key]
    if (value !== undefined) chindings += `,${JSON.stringify(key)}:${JSON.stringify(value)}`
  }
  const child = Object.create(logger) as typeof parent
  child[chindingsSym] = chindings
  return child
}
