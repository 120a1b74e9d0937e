import { spawn } from 'node:child_process'
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
