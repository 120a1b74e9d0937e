import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { projectRoot, typescriptLoader } from '../helper.ts'
import { runCommand, type Command } from '../../commands/cli.ts'

export interface Run { code: number | null; stdout: string; stderr: string }

type Env = Record<string, string | undefined>

// The process's environment with the test's changes (undefined removes a variable).
const environment = (env: Env): Env => {
  const merged: Env = { ...process.env, ...env }
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name]
  return merged
}

/**
 * Runs one of the project's commands (scripts/*.ts) in this process, as `npm run` would in `cwd` with
 * this environment, capturing what it writes; answers its exit code. The command's own code path from
 * its arguments to its exit code, with none of a new process's start-up.
 */
export async function runScriptIn (cwd: string, script: string, args: string[], env: Env, options: { isTTY?: boolean } = {}): Promise<Run> {
  const { command } = await import(pathToFileURL(join(projectRoot, script)).href) as { command: Command<never> }
  let stdout = ''
  let stderr = ''
  const code = await runCommand(command, args, {
    stdout: { write: (text: string) => { stdout += text }, isTTY: options.isTTY ?? false },
    stderr: { write: (text: string) => { stderr += text }, isTTY: options.isTTY ?? false },
    env: environment(env),
    cwd
  })
  return { code, stdout, stderr }
}

export function runScript (script: string, args: string[], env: Env, options: { isTTY?: boolean } = {}): Promise<Run> {
  return runScriptIn(projectRoot, script, args, env, options)
}

/**
 * Runs one of the project's scripts as its own Node process, as a user would: for what only a process
 * shows (its exit, signals, a lock held by another process, a terminal).
 */
export function spawnScript (script: string, args: string[], env: Env, cwd = projectRoot): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', typescriptLoader, join(projectRoot, script), ...args], { cwd, env: environment(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

export interface Started { lines: string[]; child: ReturnType<typeof spawn>; line: string }

/**
 * Starts server.ts as `npm start` would and waits for the first stdout line that matches, answering it
 * with every line before it; the server is stopped when the test ends.
 */
export async function startServer (t: Test, env: Env, match: RegExp, cwd = projectRoot, loader = typescriptLoader): Promise<Started> {
  const child = spawn(process.execPath, ['--import', loader, join(projectRoot, 'server.ts')], { cwd, env: environment(env), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    }
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const lines: string[] = []
  // A first start on the embedded database creates, migrates and seeds it: a busy machine takes a while.
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      lines.push(line)
      if (match.test(line)) return { lines, child, line }
    }
  } finally {
    clearTimeout(timer)
  }
  throw new Error(`the server ended before logging ${match}: ${stderr}\n${lines.join('\n')}`)
}
