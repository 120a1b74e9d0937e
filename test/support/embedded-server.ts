import type { Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { freePort, projectRoot, testSecrets, typescriptLoader } from '../helper.ts'

/** The environment of a server or command on the embedded database in dir (never on PostgreSQL). */
export const embeddedEnv = (dir: string, extra: Record<string, string> = {}): Record<string, string | undefined> => ({
  DATABASE_URL: undefined,
  PGLITE_DIR: dir,
  NODE_ENV: 'development',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  LOG_FORMAT: 'json',
  REDIS_URL: undefined,
  ...testSecrets,
  ...extra
})

export interface EmbeddedServer { child: ChildProcess; pid: number; base: string; output(): string; exited: Promise<number | null> }

/**
 * A server on the embedded database in dir as `npm start` runs it, once /api/v1/stats answers (the
 * database opened, migrated, seeded); killed when the test ends if it still runs.
 */
export async function startEmbeddedServer (t: Test, dir: string): Promise<EmbeddedServer> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', typescriptLoader, 'server.ts'], { cwd: projectRoot, env: { ...process.env, ...embeddedEnv(dir, { PORT: String(port), LOG_LEVEL: 'info' }) }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (d) => { output += d })
  child.stderr!.on('data', (d) => { output += d })
  const exited = once(child, 'exit').then(([code]) => code as number | null)
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })
  const server = { child, pid: child.pid!, base: `http://127.0.0.1:${port}`, output: () => output, exited }
  let gone = false
  void exited.then(() => { gone = true })
  const deadline = Date.now() + 600_000
  // eslint-disable-next-line no-unmodified-loop-condition -- `gone` is set when the process exits
  while (Date.now() < deadline && !gone) {
    if (await fetch(`${server.base}/api/v1/stats`).then((r) => r.ok, () => false)) return server
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`the server did not start: ${output}`)
}
