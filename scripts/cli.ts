import { parseArgs, type ParseArgsConfig } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../lib/config.ts'
import { EnvFileError, loadEnvFile } from '../lib/env-file.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'
import { EmbeddedDatabaseInUse } from '../db/embedded-lock.ts'

// A user's mistake ends a CLI with one line on stderr and a non-zero exit, never a stack trace.
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message)
  }
}

export interface CommandSpec {
  // The synopsis, e.g. 'npm run import -- <file.kml|file.kmz> [options]'; --help prints it first.
  usage: string
  // The rest of --help: what the command does, its options with their defaults, the settings it reads.
  help: string
  // The names of the required positional arguments, in order (as in the synopsis); none by default.
  positionals?: string[]
}

// The settings section of the --help of every command that opens the database.
export const DATABASE_SETTINGS = `settings (from the environment, or from .env in the current directory; the environment wins):
  DATABASE_URL   PostgreSQL connection URL (default: unset, the embedded database in PGLITE_DIR)
  PGLITE_DIR     directory of the embedded database (default: ./data/pglite)`

// The parts of parseArgs' message worth a line: "Unknown option '--x'. To specify…" → --x.
const quoted = (message: string) => /'([^']*)'/.exec(message)?.[1] ?? ''

function usageError(message: string): never {
  console.error(`error: ${message} (see --help)`)
  process.exit(2)
}

/**
 * A command's start: its arguments parsed strictly (`-h`/`--help` prints the usage and exits 0; an
 * unknown option, a missing or extra argument is one line on stderr and exit 2), then `.env` loaded
 * into the environment (the environment wins), before any setting is read or anything is opened.
 */
export function commandLine<T extends ParseArgsConfig>(spec: CommandSpec, config: T, args: string[] = process.argv.slice(2)): { values: ReturnType<typeof parseArgs<T>>['values']; positionals: string[] } {
  const names = spec.positionals ?? []
  let parsed
  try {
    parsed = parseArgs({
      ...config,
      args,
      strict: true,
      allowPositionals: true,
      options: { ...config.options, help: { type: 'boolean', short: 'h' } }
    })
  } catch (err) {
    const { code, message } = err as { code?: string; message: string }
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') usageError(`unknown option ${quoted(message)}`)
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const option = quoted(message).split(' ')[0]
      usageError(/does not take an argument/.test(message) ? `option ${option} takes no value` : `option ${option} needs a value`)
    }
    usageError(message.split('. ')[0].replace(/^./, (c) => c.toLowerCase()))
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(`usage: ${spec.usage}\n\n${spec.help.trim()}\n`)
    process.exit(0)
  }
  const { positionals } = parsed
  if (positionals.length < names.length) usageError(`missing ${names.slice(positionals.length).join(' ')}; usage: ${spec.usage}`)
  if (positionals.length > names.length) usageError(`unexpected argument ${JSON.stringify(positionals[names.length])}; usage: ${spec.usage}`)
  try {
    loadEnvFile()
  } catch (err) {
    if (!(err instanceof EnvFileError)) throw err
    console.error(`error: ${err.message}`)
    process.exit(1)
  }
  delete (parsed.values as { help?: boolean }).help
  return { values: parsed.values as ReturnType<typeof parseArgs<T>>['values'], positionals }
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
  const where = config.DATABASE_URL ? 'the database at DATABASE_URL' : `the embedded database in ${config.PGLITE_DIR}`
  const cannotOpen = (err: unknown) => new CliError(`cannot open ${where}: ${err instanceof Error ? err.message : String(err)}`)
  let handle: DatabaseHandle
  try {
    handle = await openDatabase({
      url: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      poolMax: 2,
      connectionTimeoutMillis: config.DB_CONNECTION_TIMEOUT_MS,
      statementTimeoutMillis: 0,
      pgliteSharedBuffersMb: config.PGLITE_SHARED_BUFFERS_MB
    })
  } catch (err) {
    // The embedded database's owner (a running server, another command) is named, with the ways out.
    if (err instanceof EmbeddedDatabaseInUse) throw new CliError(err.message)
    throw cannotOpen(err)
  }
  try {
    await migrateToLatest(handle.db)
  } catch (err) {
    await handle.close().catch(() => {})
    throw cannotOpen(err)
  }
  return handle
}
