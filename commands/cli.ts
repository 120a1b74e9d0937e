import { parseArgs, type ParseArgsConfig } from 'node:util'
import { resolve } from 'node:path'
import { AsyncLocalStorage } from 'node:async_hooks'
import { request } from 'node:http'
import { pathToFileURL } from 'node:url'
import { ConfigError, type Config } from '../lib/config.ts'
import { EnvFileError, loadEnvFile } from '../lib/env-file.ts'
import { migrateDatabase, openDatabase, type DatabaseHandle } from '../db/index.ts'
import { EmbeddedDatabaseInUse, ownerState, readOwner } from '../db/embedded-lock.ts'
import { LANE_POOL_MIN } from '../db/placemark-import.ts'
import { findCommandSocket } from '../db/embedded.ts'

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
  // The command's name in commands/index.ts, and whether (given its options) it opens the database:
  // such a command, run while `npm start` owns the embedded database, runs inside that server.
  name?: string
  opensDatabase?: (values: Record<string, unknown>) => boolean
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
    // Beside a running server that owns the embedded database, the command runs inside that server
    // (through its command socket), where the database is, and what it changes is served at once.
    const socket = spec.name && spec.opensDatabase?.(parsed.values) && !sharedDatabase.getStore() ? serverCommandSocket(env, io.cwd) : null
    if (socket) return await runInServer(socket, spec.name!, args, io)
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

// The database of the server a command runs inside (see runInServer): commands use it as their own.
const sharedDatabase = new AsyncLocalStorage<DatabaseHandle>()

/** Runs fn with `handle` as the database every openMigratedDatabase() call inside it answers (not closed by them). */
export function withDatabase<T> (handle: DatabaseHandle, fn: () => Promise<T>): Promise<T> {
  return sharedDatabase.run(handle, fn)
}

export async function openMigratedDatabase (config: Config): Promise<DatabaseHandle> {
  const shared = sharedDatabase.getStore()
  if (shared) return { ...shared, close: async () => {} }
  const where = config.DATABASE_URL ? 'the database at DATABASE_URL' : `the embedded database in ${config.PGLITE_DIR}`
  const cannotOpen = (err: unknown) => new CliError(`cannot open ${where}: ${err instanceof Error ? err.message : String(err)}`)
  let handle: DatabaseHandle
  try {
    handle = await openDatabase({
      url: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      // A placemark import's own connection and its two lanes (db/placemark-import.ts); other commands use one or two.
      poolMax: LANE_POOL_MIN,
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
    await migrateDatabase(handle)
  } catch (err) {
    await handle.close().catch(() => {})
    throw cannotOpen(err)
  }
  return handle
}

/**
 * The command socket of the server that owns the embedded database these settings name, if one is
 * running there (no DATABASE_URL, a directory and not memory://, its owner a live server).
 */
function serverCommandSocket (env: Record<string, string | undefined>, cwd: string): string | null {
  if (env.DATABASE_URL) return null
  const dir = env.PGLITE_DIR || './data/pglite'
  if (dir.startsWith('memory://')) return null
  const absolute = resolve(cwd, dir)
  const owner = readOwner(absolute)
  if (!owner || owner.owner !== 'the server' || ownerState(owner) !== 'alive') return null
  return findCommandSocket(absolute)
}

/**
 * Runs the command inside the server listening on `socket`: its output is streamed back as it is
 * written (one JSON line per write: {"stdout": …}, {"stderr": …}, then {"exit": code}).
 */
function runInServer (socket: string, name: string, args: string[], io: CommandIo): Promise<number> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ args, cwd: io.cwd, isTTY: Boolean(io.stderr.isTTY) })
    const req = request({ socketPath: socket, method: 'POST', path: `/commands/${encodeURIComponent(name)}`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let pending = ''
      let code = 1
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        pending += chunk
        let end: number
        while ((end = pending.indexOf('\n')) >= 0) {
          const line = JSON.parse(pending.slice(0, end)) as { stdout?: string; stderr?: string; exit?: number; error?: string; message?: string }
          pending = pending.slice(end + 1)
          if (line.stdout !== undefined) io.stdout.write(line.stdout)
          if (line.stderr !== undefined) io.stderr.write(line.stderr)
          if (line.exit !== undefined) code = line.exit
          if (line.message !== undefined) io.stderr.write(`error: the server refused the command: ${line.message}\n`)
        }
      })
      res.on('end', () => resolve(code))
      res.on('error', () => resolve(1))
    })
    req.on('error', (err) => {
      io.stderr.write(`error: cannot reach the server that owns the embedded database (${err.message}); stop it and run the command again\n`)
      resolve(1)
    })
    req.end(body)
  })
}
