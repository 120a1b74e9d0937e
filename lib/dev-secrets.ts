import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { randomSecret } from './auth/tokens.ts'
import { MIN_SECRET_LENGTH, type Config } from './config.ts'

export const DEV_SECRETS_FILE = './data/dev-secrets.json'

interface Kept { JWT_SECRET: string; JWT_REFRESH_SECRET: string }

const usable = (value: unknown): value is string => typeof value === 'string' && value.length >= MIN_SECRET_LENGTH

/**
 * Outside production, signing secrets left unset are generated once and kept in the git-ignored data
 * folder (readable by this user only), so that a restart or a `npm run dev` reload signs no one out.
 * An embedded database in memory keeps nothing between starts, so neither do its secrets. Production
 * never comes here: loadConfig requires both secrets there.
 */
export function keepDevelopmentSecrets (config: Config, file = DEV_SECRETS_FILE): { config: Config; file: string | null } {
  if (config.isProduction || (config.JWT_SECRET && config.JWT_REFRESH_SECRET)) return { config, file: null }
  if (!config.DATABASE_URL && config.PGLITE_DIR.startsWith('memory://')) return { config, file: null }
  let kept: Partial<Kept> = {}
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as Partial<Kept>
  } catch {}
  if (!usable(kept.JWT_SECRET) || !usable(kept.JWT_REFRESH_SECRET) || kept.JWT_SECRET === kept.JWT_REFRESH_SECRET) {
    kept = { JWT_SECRET: randomSecret(), JWT_REFRESH_SECRET: randomSecret() }
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600 })
  }
  return {
    config: { ...config, JWT_SECRET: config.JWT_SECRET ?? kept.JWT_SECRET, JWT_REFRESH_SECRET: config.JWT_REFRESH_SECRET ?? kept.JWT_REFRESH_SECRET },
    file
  }
}
