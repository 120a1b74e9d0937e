import { parseArgs, type ParseArgsConfig } from 'node:util'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ConfigError, type Config } from '../lib/config.ts'
import { EnvFileError, loadEnvFile } from '../lib/env-file.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'
import { EmbeddedDatabaseInUse } from '../db/embedded-lock.ts'

// A user's mistake ends a CLI with one line on stderr and a non-zero exit, never a stack trace.
export class CliError extends Error {
  readonly exitCode: number
  constructor (message: string, exitCode = 1) {
    super(message)
    this.exitCode = exitCode
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

/** Where a command writes, what it reads its settings from, and the directory it runs in (for `.env`). */
export interface CommandIo {
  stdout: { write(text: string): unknown; isTTY?: boolean }
  stderr: { write(text: string): unknown; isTTY?: boolean }
  env: Record<string, string | undefined>
  cwd: string
}

export interface Command<T extends ParseArgsConfig> {
  spec: CommandSpec
  config: T
  run(args: { values: ReturnType<typeof parseArgs<T>>['values']; positionals: string[] }, io: CommandIo): Promise<void>
}

/** A command: its usage and help, its options (parseArgs' form), and what it does once they parse. */
export function defineCommand<T extends ParseArgsConfig> (spec: CommandSpec, config: T, run: Command<T>['run']): Command<T> {
  return { spec, config, run }
}

// A usage mistake: one line naming it, exit 2.
const usageError = (message: string) => new CliError(`${message} (see --help)`, 2)

/**
 * Runs a command in this process and answers its exit code; nothing here exits the process. The
 * arguments are parsed strictly (`-h`/`--help` prints the usage and answers 0; an unknown option, a
 * missing or extra argument is one line on stderr and 2), then `.env` from `io.cwd` fills in what
 * `io.env` leaves unset, before any setting is read or anything is opened. A failure is one line on
 * stderr: a CliError's own code, 1 for anything else (with the stack when DEBUG is set).
 */
export async function runCommand<T extends ParseArgsConfig> (command: Command<T>, args: string[], io: CommandIo): Promise<number> {
  const { spec, config } = command
  const names = spec.positionals ?? []
  try {
    let parsed
    try {
      parsed = parseArgs({ ...config, args, strict: true, allowPositionals: true, options: { ...config.options, help: { type: 'boolean', short: 'h' } } })
    } catch (err) {
      const { code, message } = err as { code?: string; message: string }
      if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw usageError(`unknown option ${quoted(message)}`)
      if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
        const option = quoted(message).split(' ')[0]
        throw usageError(/does not take an argument/.test(message) ? `option ${option} takes no value` : `option ${option} needs a value`)
      }
      throw usageError(message.split('. ')[0].replace(/^./, (c) => c.toLowerCase()))
    }
    if ((parsed.values as { help?: boolean }).help) {
      io.stdout.write(`usage: ${spec.usage}\n\n${spec.help.trim()}\n`)
      return 0
    }
    const { positionals } = parsed
    if (positionals.length < names.length) throw usageError(`missing ${names.slice(positionals.length).join(' ')}; usage: ${spec.usage}`)
    if (positionals.length > names.length) throw usageError(`unexpected argument ${JSON.stringify(positionals[names.length])}; usage: ${spec.usage}`)
    const env = { ...io.env }
    loadEnvFile(resolve(io.cwd, '.env'), env, io.cwd)
    delete (parsed.values as { help?: boolean }).help
    await command.run({ values: parsed.values as ReturnType<typeof parseArgs<T>>['values'], positionals }, { ...io, env })
    return 0
  } catch (err) {
    if (err instanceof CliError || err instanceof ConfigError || err instanceof EnvFileError) {
      io.stderr.write(`error: ${err.message}\n`)
      return err instanceof CliError ? err.exitCode : 1
    }
    io.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`)
    if (io.env.DEBUG) io.stderr.write(`${err instanceof Error ? err.stack : ''}\n`)
    return 1
  }
}

/** The process's own streams, environment and directory. */
export const processIo = (): CommandIo => ({ stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() })

/**
 * Runs the command when its module is the program (`node scripts/import.ts …`), not when it is
 * imported. A failed command exits at once with its code: an open handle must not keep it alive.
 */
export async function runAsProgram<T extends ParseArgsConfig> (command: Command<T>, moduleUrl: string): Promise<void> {
  if (!process.argv[1] || pathToFileURL(process.argv[1]).href !== moduleUrl) return
  const code = await runCommand(command, process.argv.slice(2), processIo())
  if (code !== 0) process.exit(code)
}

export async function openMigratedDatabase (config: Config): Promise<DatabaseHandle> {
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
