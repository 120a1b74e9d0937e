import type { Static } from '@sinclair/typebox'
import { Type, Value } from './typebox.ts'
import { availableParallelism, totalmem } from 'node:os'
import { ACCESS_ALGORITHMS, MIN_SECRET_LENGTH, privateKeyRing, secretRing, splitSecrets } from './auth/key-ring.ts'

export { MIN_SECRET_LENGTH }

/**
 * The database pool's default size: twice the cores this process may run on, plus one, and at most 10
 * (pg's own default). More connections than the work can use at once only queue inside PostgreSQL, where
 * they cost context switches and shared-buffer contention: on 2 cores, with PostgreSQL on the same
 * machine, random boxes on the database path answered 40–45 % more requests a second with 5 connections
 * than with 10, at a lower p99 (docs/performance.md). DB_POOL_MAX overrides it, for a database server with
 * cores of its own to spare.
 */
export function defaultPoolMax (cores: number = availableParallelism()): number {
  return Math.min(10, 2 * Math.max(1, cores) + 1)
}

/**
 * The memory this process may use, in bytes: its control group's limit where one is set (a container's),
 * else the machine's memory.
 */
export function memoryLimit (): number {
  const total = totalmem()
  // Node 20 gives undefined without a limit, later Nodes 0; an unlimited control group, a number past the machine's.
  const constrained = process.constrainedMemory?.() ?? 0
  return constrained > 0 && constrained < total ? constrained : total
}

/**
 * The largest box index: its records are addressed by 32-bit offsets (4 GiB of summaries), and it is
 * handed from its builder to the server as one buffer, which Node 20 holds to 4 GiB.
 */
export const BOX_INDEX_MAX_MB = 4000

/**
 * The box index's default budget, in MB: a quarter of the memory this process may use (as a JVM's
 * default heap is), so that a dataset the machine can hold in memory is served from memory, and a small
 * container never loads an index it has no room for. On the bench's 24 GiB machine the cap, 4,000 MB: the
 * 10M generated placemarks' index (1.9 GB) loads; a 1 GiB container keeps 256 MB, enough for 1M (200 MB).
 * BBOX_INDEX_MB overrides it; either way at most BOX_INDEX_MAX_MB.
 */
export function defaultBoxIndexMb (limit: number = memoryLimit()): number {
  return Math.min(BOX_INDEX_MAX_MB, Math.floor(limit / 4 / 1048576))
}

// Environment variables arrive as strings; Value.Convert turns them into the declared types.
export const ConfigSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], { default: 'development' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  // Unset: readable lines on a terminal outside production, JSON otherwise (lib/logger.ts logFormat).
  LOG_FORMAT: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('pretty')])),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  // The change bus's listening connection, when DATABASE_URL goes through a transaction-pooling proxy
  // (PgBouncer) that cannot carry LISTEN: a direct connection string. Unset: DATABASE_URL.
  DATABASE_LISTEN_URL: Type.Optional(Type.String({ minLength: 1 })),
  // The change bus's fallback: how often each instance reads the change log (notifications bring
  // changes at once; this catches what a lost listening connection missed).
  CHANGE_POLL_MS: Type.Integer({ minimum: 50, default: 1000 }),
  PGLITE_DIR: Type.String({ minLength: 1, default: './data/pglite' }),
  // The embedded database's PostgreSQL shared_buffers, in MB: its main share of the server's memory.
  PGLITE_SHARED_BUFFERS_MB: Type.Integer({ minimum: 1, maximum: 4096, default: 16 }),
  DB_POOL_MAX: Type.Integer({ minimum: 1, maximum: 500, default: defaultPoolMax() }),
  DB_CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 3000 }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 10000 }),
  // A query without an answer from the database for this long fails on the client side (a network that
  // drops packets silently); 0 turns it off. Unset: the statement timeout plus 5 s.
  DB_QUERY_TIMEOUT_MS: Type.Optional(Type.Integer({ minimum: 0 })),
  // A request (headers and body) not received whole within this time is answered 408 and closed.
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 30000 }),
  // Open client connections at most; past it new connections are closed at once.
  MAX_CONNECTIONS: Type.Integer({ minimum: 1, default: 10000 }),
  // Open connections one client address may hold at once (0: no cap); raise it behind a proxy that
  // opens many connections (TRUST_PROXY does not change which address a socket has).
  MAX_CONNECTIONS_PER_ADDRESS: Type.Integer({ minimum: 0, default: 256 }),
  // Guild event streams (GET /api/guilds/:guildId/events) one user may hold open on an instance; the next is 429.
  STREAM_MAX_PER_USER: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }),
  // On shutdown, requests still arriving or running this long after it began are cut off.
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, default: 5000 }),
  // A Redis command without an answer for this long fails (the shared state is then skipped).
  REDIS_COMMAND_TIMEOUT_MS: Type.Integer({ minimum: 50, default: 1000 }),
  // Seed an embedded database that lacks them with the sample placemarks and demo guild activity. Unset:
  // outside production only, so production never serves demo data it was not asked for.
  SEED_SAMPLE_DATA: Type.Optional(Type.Boolean()),
  CORS_ORIGINS: Type.Optional(Type.String()),
  TRUST_PROXY: Type.Optional(Type.String()),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1 })),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 600 }),
  RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 minute' }),
  AUTH_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 60 }),
  // POST /api/activity: requests per API key per RATE_LIMIT_WINDOW (its own budget, not the per-IP one), and
  // the failed keys one client may send per window before it is refused without a lookup.
  API_KEY_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 1200 }),
  // Ingestion (API and CLI) refuses events dated more than this after now (a sender's clock may run a little ahead)...
  ACTIVITY_MAX_FUTURE: Type.String({ minLength: 1, default: '5m' }),
  // ...or dated before this (UTC): the provider's id epoch (Discord ids count from 2015-01-01), older than any guild.
  ACTIVITY_MIN_DATE: Type.String({ minLength: 1, default: '2015-01-01' }),
  // The box index's memory budget in MB (0: no index). Unset: a quarter of the memory the process may use.
  BBOX_INDEX_MB: Type.Integer({ minimum: 0, maximum: BOX_INDEX_MAX_MB, default: defaultBoxIndexMb() }),
  // On PostgreSQL, a dataset of at least this many placemarks has its box index built by a process of its own.
  BBOX_INDEX_WORKER_MIN: Type.Integer({ minimum: 0, default: 50_000 }),
  // Vector tiles cluster points at zooms strictly below this one (23: at every zoom, 0: never).
  TILE_CLUSTER_MAX_ZOOM: Type.Integer({ minimum: 0, maximum: 23, default: 14 }),
  // Tile requests one client (an address, an IPv6 /64) has under way at once; its next ones wait their turn.
  TILE_CONCURRENCY_PER_CLIENT: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  PUBLIC_URL: Type.Optional(Type.String({ minLength: 1 })),
  IDP_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  IDP_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  IDP_REDIRECT_URI: Type.Optional(Type.String({ minLength: 1 })),
  IDP_AUTHORIZE_URL: Type.Optional(Type.String({ minLength: 1 })),
  IDP_TOKEN_URL: Type.Optional(Type.String({ minLength: 1 })),
  IDP_USER_URL: Type.Optional(Type.String({ minLength: 1 })),
  IDP_GUILDS_URL: Type.Optional(Type.String({ minLength: 1 })),
  IDP_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 5000 }),
  // The access tokens' algorithm: HS256 with the JWT_SECRET ring, or ES256 / EdDSA with the
  // JWT_PRIVATE_KEYS ring (public keys then published at /.well-known/jwks.json).
  JWT_ALGORITHM: Type.Union(ACCESS_ALGORITHMS.map((a) => Type.Literal(a)), { default: 'HS256' }),
  // Key rings: secrets separated by commas (PEM keys one after another, or a comma list of PEM files,
  // for JWT_PRIVATE_KEYS); the first signs, every one verifies.
  JWT_SECRET: Type.Optional(Type.String()),
  JWT_REFRESH_SECRET: Type.Optional(Type.String()),
  JWT_PRIVATE_KEYS: Type.Optional(Type.String()),
  JWT_ISSUER: Type.String({ minLength: 1, default: 'guild-analytics' }),
  JWT_ACCESS_EXPIRES_IN: Type.String({ minLength: 1, default: '15m' }),
  JWT_REFRESH_EXPIRES_IN: Type.String({ minLength: 1, default: '7d' }),
  // A session ends this long after its sign-in however often it is refreshed, so the guild list stored
  // at sign-in is never older than this.
  SESSION_MAX_AGE: Type.String({ minLength: 1, default: '7d' }),
  // Ended sessions (expired or revoked) and spent refresh-token records are deleted this long after.
  SESSION_RETENTION: Type.String({ minLength: 1, default: '30d' }),
  // A rotated refresh token presented again this soon after its rotation is a second tab, not a thief ('0': never).
  REFRESH_REUSE_GRACE: Type.String({ minLength: 1, default: '10s' }),
  // Security history (sign-ins, revocations, role changes...) is deleted this long after.
  AUDIT_RETENTION: Type.String({ minLength: 1, default: '90d' }),
  SIGNIN_MAX_FAILURES: Type.Integer({ minimum: 1, default: 5 }),
  SIGNIN_BLOCK_SECONDS: Type.Integer({ minimum: 1, default: 60 }),
  // The longest block: later blocks of one IP double the first up to this.
  SIGNIN_MAX_BLOCK_SECONDS: Type.Integer({ minimum: 1, default: 3600 }),
  PROFILE_CACHE_SIZE: Type.Integer({ minimum: 0, default: 10_000 }),
  // The map page's base layer: a raster tile URL template ({z}/{x}/{y}). Unset: OpenStreetMap's standard
  // tiles in development, none otherwise; `none`: no base map, and the page needs no internet.
  MAP_TILE_URL: Type.Optional(Type.String({ minLength: 1 })),
  MAP_TILE_ATTRIBUTION: Type.Optional(Type.String({ minLength: 1 })),
  // Prometheus metrics at GET /metrics; false turns the endpoint and the per-route timings off.
  METRICS: Type.Boolean({ default: true }),
  // Serve /metrics on this port only (its own small server on HOST), not on PORT.
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  // On PORT, /metrics answers loopback and private addresses; with this token (16+ characters), also
  // anyone sending `Authorization: Bearer <token>`.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  // Load shedding: past this mean event-loop delay new requests are answered 503; 0 turns it off.
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000 }),
  // Load shedding: past this V8 heap use new requests are answered 503; 0 turns it off. Unset: 90 % of
  // the V8 heap limit.
  MAX_HEAP_USED_BYTES: Type.Optional(Type.Integer({ minimum: 0 })),
  // Security headers (helmet, with the Content-Security-Policy); false leaves them to a proxy in front.
  SECURITY_HEADERS: Type.Boolean({ default: true })
})

export type RawConfig = Static<typeof ConfigSchema>

export interface Config extends Omit<RawConfig, 'HOST' | 'PUBLIC_URL' | 'SEED_SAMPLE_DATA'> {
  HOST: string
  PUBLIC_URL: string
  SEED_SAMPLE_DATA: boolean
  isProduction: boolean
  // True when no external identity provider is configured outside production: /dev/idp stands in.
  devIdp: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

// Production refuses missing or weak signing keys; development may leave them unset (random ones are
// generated). Every problem is named by its setting and a key's position, never by the key itself.
function checkSecrets (raw: RawConfig, isProduction: boolean, problems: string[]): void {
  const { JWT_ALGORITHM, JWT_SECRET, JWT_REFRESH_SECRET, JWT_PRIVATE_KEYS } = raw
  const asymmetric = JWT_ALGORITHM !== 'HS256'
  for (const [name, value] of [['JWT_SECRET', JWT_SECRET], ['JWT_REFRESH_SECRET', JWT_REFRESH_SECRET]] as const) {
    if (value === undefined) {
      // With ES256 or EdDSA, JWT_SECRET signs nothing.
      if (isProduction && !(asymmetric && name === 'JWT_SECRET')) problems.push(`${name} is required in production (at least ${MIN_SECRET_LENGTH} characters)`)
    } else {
      problems.push(...secretRing(name, value).problems)
    }
  }
  if (JWT_SECRET !== undefined && JWT_REFRESH_SECRET !== undefined) {
    const refresh = new Set(splitSecrets(JWT_REFRESH_SECRET))
    if (splitSecrets(JWT_SECRET).some((s) => refresh.has(s))) problems.push('JWT_SECRET and JWT_REFRESH_SECRET must be different')
  }
  if (asymmetric) {
    if (JWT_PRIVATE_KEYS !== undefined) problems.push(...privateKeyRing('JWT_PRIVATE_KEYS', JWT_PRIVATE_KEYS, JWT_ALGORITHM).problems)
    else if (isProduction) problems.push(`JWT_PRIVATE_KEYS is required in production with JWT_ALGORITHM=${JWT_ALGORITHM} (PEM private keys, or a comma list of PEM files)`)
  } else if (JWT_PRIVATE_KEYS !== undefined) {
    problems.push('JWT_PRIVATE_KEYS is set but JWT_ALGORITHM is HS256: set JWT_ALGORITHM=ES256 or EdDSA to sign with it, or unset it')
  }
}

// Connection URLs may carry a password: an error shows them with it masked.
const CONNECTION_SETTINGS = new Set(['DATABASE_URL', 'DATABASE_LISTEN_URL', 'REDIS_URL'])

/** The value with the password of its user information and of a `password=` parameter masked. */
function maskPassword (value: string): string {
  const start = /^[a-z][a-z0-9+.-]*:\/\//i.exec(value)?.[0].length ?? 0
  const at = value.lastIndexOf('@')
  const colon = value.indexOf(':', start)
  const masked = at > start && colon >= 0 && colon < at ? `${value.slice(0, colon)}:***${value.slice(at)}` : value
  return masked.replace(/([?&]password=)[^&#]*/gi, '$1***')
}

/** The problem of a setting's value, named and shown (a connection URL's password masked). */
// Secrets: an error names the setting and its problem, never its value.
const SECRET_SETTINGS = new Set(['IDP_CLIENT_SECRET', 'JWT_SECRET', 'JWT_REFRESH_SECRET', 'JWT_PRIVATE_KEYS', 'METRICS_TOKEN'])

function invalidSetting (name: string, problem: string, value: string | undefined): string {
  if (value !== undefined && SECRET_SETTINGS.has(name)) return `invalid configuration: ${name} ${problem} (its value is a secret and not shown)`
  const shown = value !== undefined && CONNECTION_SETTINGS.has(name) ? maskPassword(value) : value
  return `invalid configuration: ${name} ${problem} (got ${JSON.stringify(shown ?? null)})`
}

const httpUrl = (value: string) => /^https?:\/\//i.test(value) && URL.canParse(value)
// As pg reads them: a URL (whose host may be empty, the socket then named by ?host=), or a socket directory.
const postgresUrl = (value: string) => value.startsWith('/') || /^socket:/i.test(value) ||
  (/^postgres(ql)?:\/\//i.test(value) && URL.canParse(value.replace('@/', '@localhost/')))
// As ioredis reads them: a URL, or a Unix socket's path.
const redisUrl = (value: string) => /^\/(?!\/)/.test(value) || (/^rediss?:\/\//i.test(value) && URL.canParse(value))

// Tiles on this server's own origin are a path; on another origin an http(s) template ({s}, {z}, {x}, {y}).
// `none`: no base map.
const tileUrl = (value: string) => value === 'none' || httpUrl(value) || /^\/(?!\/)/.test(value)

// An Origin header is compared with each listed origin as it is: anything more than scheme://host[:port] never matches.
function corsOriginsProblem (setting: string): string | null {
  for (const origin of setting.split(',').map((o) => o.trim()).filter(Boolean)) {
    const actual = URL.canParse(origin) ? new URL(origin).origin : 'null'
    if (actual === origin) continue
    const hint = actual === 'null' ? '' : `, its origin is ${JSON.stringify(actual)}`
    return `expected comma-separated origins (scheme://host[:port], nothing after): ${JSON.stringify(origin)} is not one${hint}`
  }
  return null
}

const expecting = (accepts: (value: string) => boolean, expected: string) => (value: string) => (accepts(value) ? null : expected)

// The problem of each URL setting's value, or null. A value no client could use stops the start here,
// not at the first request that needs it (a sign-in, a connection).
const URL_SETTINGS: Partial<Record<keyof RawConfig, (value: string) => string | null>> = {
  DATABASE_URL: expecting(postgresUrl, 'expected a postgres:// or postgresql:// connection URL'),
  DATABASE_LISTEN_URL: expecting(postgresUrl, 'expected a postgres:// or postgresql:// connection URL'),
  REDIS_URL: expecting(redisUrl, 'expected a redis:// or rediss:// URL'),
  CORS_ORIGINS: corsOriginsProblem,
  PUBLIC_URL: expecting(httpUrl, 'expected an absolute http(s) URL'),
  IDP_REDIRECT_URI: expecting(httpUrl, 'expected an absolute http(s) URL'),
  IDP_AUTHORIZE_URL: expecting(httpUrl, 'expected an absolute http(s) URL'),
  IDP_TOKEN_URL: expecting(httpUrl, 'expected an absolute http(s) URL'),
  IDP_USER_URL: expecting(httpUrl, 'expected an absolute http(s) URL'),
  IDP_GUILDS_URL: expecting(httpUrl, 'expected an absolute http(s) URL'),
  MAP_TILE_URL: expecting(tileUrl, 'expected an absolute http(s) URL template, or a path from / on this server')
}

// In the schema's order, as the other problems are listed.
function checkUrls (raw: RawConfig, problems: string[]): void {
  for (const name of Object.keys(ConfigSchema.properties) as Array<keyof RawConfig>) {
    const value = raw[name]
    const problem = typeof value === 'string' ? URL_SETTINGS[name]?.(value) : null
    if (problem) problems.push(invalidSetting(name, problem, value as string))
  }
}

/** One problem as it is; several as one message listing them all, so that a start shows everything to fix at once. */
function configError (problems: string[]): ConfigError {
  if (problems.length === 1) return new ConfigError(problems[0]!)
  return new ConfigError(`${problems.length} settings need attention:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
}

// The map page's default base layer in development (its tile usage policy asks for an attribution).
export const OSM_TILE_URL = 'https://tile.openstreetmap.org/{z}/{x}/{y}.png'
export const OSM_ATTRIBUTION = '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'

/** The map's base layer: `none` is no base map (undefined), unset is OpenStreetMap in development only. */
function mapBaseLayer (raw: RawConfig): { MAP_TILE_URL: string | undefined, MAP_TILE_ATTRIBUTION: string | undefined } {
  if (raw.MAP_TILE_URL === 'none') return { MAP_TILE_URL: undefined, MAP_TILE_ATTRIBUTION: undefined }
  if (raw.MAP_TILE_URL === undefined && raw.NODE_ENV === 'development') return { MAP_TILE_URL: OSM_TILE_URL, MAP_TILE_ATTRIBUTION: raw.MAP_TILE_ATTRIBUTION ?? OSM_ATTRIBUTION }
  return { MAP_TILE_URL: raw.MAP_TILE_URL, MAP_TILE_ATTRIBUTION: raw.MAP_TILE_ATTRIBUTION }
}

export function loadConfig (env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const input: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key]
    if (value !== undefined && value !== '') input[key] = value
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, input))
  const problems: string[] = []
  const named = new Set<string>()
  for (const error of Value.Errors(ConfigSchema, converted)) {
    const name = error.path.replace(/^\//, '').split('/')[0]!
    if (named.has(name)) continue
    named.add(name)
    problems.push(invalidSetting(name, error.message.toLowerCase(), env[name]))
  }
  if (problems.length) throw configError(problems)
  const raw = converted as RawConfig
  const isProduction = raw.NODE_ENV === 'production'
  // Outside production the server (and the development identity provider) stays on loopback unless told otherwise.
  const HOST = raw.HOST ?? (isProduction ? '0.0.0.0' : '127.0.0.1')
  const PUBLIC_URL = (raw.PUBLIC_URL ?? `http://localhost:${raw.PORT}`).replace(/\/$/, '')
  const devIdp = !raw.IDP_CLIENT_ID && !isProduction
  const SEED_SAMPLE_DATA = raw.SEED_SAMPLE_DATA ?? !isProduction
  checkUrls(raw, problems)
  if (isProduction) {
    for (const name of ['IDP_CLIENT_ID', 'IDP_CLIENT_SECRET', 'IDP_REDIRECT_URI', 'IDP_AUTHORIZE_URL', 'IDP_TOKEN_URL', 'IDP_USER_URL', 'IDP_GUILDS_URL'] as const) {
      if (!raw[name]) problems.push(`${name} is required in production (the development identity provider is refused there)`)
    }
    // Without it, sign-in would send real users to http://localhost.
    if (!raw.PUBLIC_URL) problems.push('PUBLIC_URL is required in production (the address browsers use, e.g. https://api.example.com): sign-in redirects and cookies follow it')
  }
  checkSecrets(raw, isProduction, problems)
  if (problems.length) throw configError(problems)
  const { MAP_TILE_URL, MAP_TILE_ATTRIBUTION } = mapBaseLayer(raw)
  return { ...raw, HOST, PUBLIC_URL, SEED_SAMPLE_DATA, MAP_TILE_URL, MAP_TILE_ATTRIBUTION, isProduction, devIdp, ...overrides }
}
