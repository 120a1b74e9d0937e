import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { resolve } from 'node:path'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../app.ts'
import { loadConfig, type Config } from '../lib/config.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'

export const projectRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
export const vegasKmz = resolve(projectRoot, '..', 'shared', 'data', 'vegas-shooting-map.kmz')
export const vegasAbsent = existsSync(vegasKmz) ? false : `the shared test dataset is absent: ${vegasKmz}`

// The admin connection creates one throw-away database per test file.
export const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export type DbKind = 'postgres' | 'pglite'
export const dbKinds: DbKind[] = ['postgres', 'pglite']

export interface Teardown { teardown(fn: () => unknown): void }

export async function createPostgresDatabase(t: Teardown): Promise<string> {
  const name = `test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await c.end()
  })
  return url.toString()
}

// A migrated, empty database of the given kind, closed when the test ends.
export async function openTestDatabase(t: Teardown, kind: DbKind): Promise<DatabaseHandle> {
  const handle = kind === 'postgres'
    ? await openDatabase({ url: await createPostgresDatabase(t), poolMax: 5 })
    : await openDatabase({ pgliteDir: 'memory://' })
  await migrateToLatest(handle.db)
  t.teardown(() => handle.close())
  return handle
}

export const testSecrets = {
  JWT_SECRET: 'test-access-secret-0123456789abcdefghijklmnopqrstuvwxyz',
  JWT_REFRESH_SECRET: 'test-refresh-secret-0123456789abcdefghijklmnopqrstuvwxyz'
}

export function testConfig(overrides: Partial<Config> = {}, env: Record<string, string> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', SEED_SAMPLE_DATA: 'false', ...testSecrets, ...env }, overrides)
}

export async function buildTestApp(t: Teardown, handle: DatabaseHandle, overrides: Partial<Config> = {}, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides, env), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  return app
}
