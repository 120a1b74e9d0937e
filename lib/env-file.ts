import { readFileSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { parseEnv } from 'node:util'

/** A `.env` file that exists but cannot be read or does not parse: one line naming the file and the line. */
export class EnvFileError extends Error {
  override name = 'EnvFileError'
}

const ASSIGNMENT = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/
const QUOTES = new Set(['"', "'", '`'])

/**
 * Checks the syntax that Node's own `.env` parser accepts without complaint but reads as something else:
 * every line is blank, a `#` comment or `NAME=value` (optionally `export NAME=value`), and a quoted value
 * ends with its quote (possibly on a later line, for multi-line values). The offending line is named by
 * number only: a malformed line may well be a secret.
 */
export function checkEnvSyntax (text: string, where = '.env'): void {
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    const match = ASSIGNMENT.exec(lines[i])
    if (!match) {
      const reason = trimmed.includes('=') ? 'the name before "=" is not a valid variable name' : 'expected NAME=value'
      throw new EnvFileError(`${where} line ${i + 1}: ${reason}`)
    }
    const [, name, value] = match
    const quote = value[0]
    if (!QUOTES.has(quote)) continue
    let rest = value.slice(1)
    let last = i
    while (!rest.includes(quote)) {
      last++
      if (last >= lines.length) throw new EnvFileError(`${where} line ${i + 1}: the value of ${name} opens a ${quote} quote that is never closed`)
      rest = lines[last]
    }
    i = last
  }
}

/**
 * Loads `.env` (from the working directory unless told otherwise) into process.env when the file exists.
 * Variables already set in the environment win over the file's values; the file only fills in the rest.
 * Returns the path loaded, or null when there is no such file.
 */
export function loadEnvFile (path = resolve('.env'), env: Record<string, string | undefined> = process.env, cwd = process.cwd()): string | null {
  const where = relative(cwd, path) || path
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    throw new EnvFileError(`cannot read ${where}: ${code ?? (err as Error).message}`)
  }
  checkEnvSyntax(text, where)
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] === undefined && value !== undefined) env[name] = value
  }
  return path
}
