import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

// Environment variables arrive as strings; Value.Convert turns them into the declared types.
export const ConfigSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], { default: 'development' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  PGLITE_DIR: Type.String({ minLength: 1, default: './data/pglite' }),
  DB_POOL_MAX: Type.Integer({ minimum: 1, maximum: 500, default: 10 }),
  DB_CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 3000 }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 10000 }),
  SEED_SAMPLE_DATA: Type.Boolean({ default: true }),
  CORS_ORIGINS: Type.Optional(Type.String()),
  TRUST_PROXY: Type.Optional(Type.String()),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1 })),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 600 }),
  RATE_LIMIT_WINDOW: Type.String({ minLength: 1, default: '1 minute' }),
  AUTH_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 60 }),
  CACHE_VERSION_POLL_MS: Type.Integer({ minimum: 50, default: 1000 })
})

export type RawConfig = Static<typeof ConfigSchema>

export interface Config extends Omit<RawConfig, 'HOST'> {
  HOST: string
  isProduction: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const input: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key]
    if (value !== undefined && value !== '') input[key] = value
  }
  const converted = Value.Convert(ConfigSchema, Value.Default(ConfigSchema, input))
  const firstError = Value.Errors(ConfigSchema, converted).First()
  if (firstError) {
    const name = firstError.path.replace(/^\//, '').split('/')[0]
    throw new ConfigError(`invalid configuration: ${name} ${firstError.message.toLowerCase()} (got ${JSON.stringify(env[name] ?? null)})`)
  }
  const raw = converted as RawConfig
  const isProduction = raw.NODE_ENV === 'production'
  // Outside production the server (and the development identity provider) stays on loopback unless told otherwise.
  const HOST = raw.HOST ?? (isProduction ? '0.0.0.0' : '127.0.0.1')
  return { ...raw, HOST, isProduction, ...overrides }
}
