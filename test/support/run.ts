import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { projectRoot } from '../helper.ts'

export interface Run { code: number | null; stdout: string; stderr: string }

// Runs one of the project's TypeScript scripts as a user would, capturing its output.
export function runScript(script: string, args: string[], env: Record<string, string | undefined>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

// tsx by its full address, for scripts run from another working directory (where `--import tsx` would not resolve).
const tsxLoader = import.meta.resolve('tsx')

/** Runs one of the project's scripts with `cwd` as its working directory (to read a `.env` there). */
export function runScriptIn(cwd: string, script: string, args: string[], env: Record<string, string | undefined>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', tsxLoader, join(projectRoot, script), ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}
