import { ConfigError, loadConfig, type Config } from '../lib/config.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'

// A user's mistake ends a CLI with one line on stderr and a non-zero exit, never a stack trace.
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message)
  }
}

export async function runCli(main: () => Promise<void>): Promise<void> {
  try {
    await main()
  } catch (err) {
    if (err instanceof CliError) {
      console.error(`error: ${err.message}`)
      process.exit(err.exitCode)
    }
    if (err instanceof ConfigError) {
      console.error(`error: ${err.message}`)
      process.exit(1)
    }
    const message = err instanceof Error ? err.message : String(err)
    console.error(`error: ${message}`)
    if (process.env.DEBUG) console.error(err)
    process.exit(1)
  }
}

export async function openMigratedDatabase(config: Config = loadConfig()): Promise<DatabaseHandle> {
  let handle: DatabaseHandle
  try {
    handle = await openDatabase({
      url: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      poolMax: 2,
      connectionTimeoutMillis: config.DB_CONNECTION_TIMEOUT_MS,
      statementTimeoutMillis: 0
    })
    await migrateToLatest(handle.db)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    const where = config.DATABASE_URL ? 'the database at DATABASE_URL' : `the embedded database in ${config.PGLITE_DIR} (is the server running on it? stop it first)`
    throw new CliError(`cannot open ${where}: ${message}`)
  }
  return handle
}
