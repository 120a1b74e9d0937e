import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { resolve } from 'node:path'
import pg from 'pg'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import app, { serverOptions } from '../app.ts'
import { loadConfig, type Config } from '../lib/config.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'
import { openKmlSource } from '../lib/kml/source.ts'
import { importPlacemarks } from '../lib/import/placemarks.ts'

export const projectRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
export const vegasKmz = resolve(projectRoot, '..', 'shared', 'data', 'vegas-shooting-map.kmz')
export const vegasAbsent = existsSync(vegasKmz) ? false : `the shared test dataset is absent: ${vegasKmz}`

/** Imports the shared Vegas KMZ (545 placemarks, names in Los Angeles time) into a test database. */
export async function importVegas(handle: DatabaseHandle): Promise<void> {
  const source = await openKmlSource(vegasKmz)
  try {
    await importPlacemarks(handle, source.chunks, { timeZone: 'America/Los_Angeles', source: 'vegas.kmz' })
  } finally {
    await source.close()
  }
}

// The admin connection creates one throw-away database per test file.
export const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export type DbKind = 'postgres' | 'pglite'
export const dbKinds: DbKind[] = ['postgres', 'pglite']

export interface Teardown { teardown(fn: () => unknown): void }

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * One throw-away database per call, named after the test process (`test_<pid>_<random>`) and dropped
 * when the test ends. A test process killed before its teardown (a timeout) leaves its database behind:
 * the next call drops every such database whose process is gone, so none accumulate.
 */
export async function createPostgresDatabase(t: Teardown): Promise<string> {
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    const { rows } = await admin.query<{ datname: string }>(String.raw`SELECT datname FROM pg_database WHERE datname ~ '^test_\d+_[0-9a-f]{8}$'`)
    for (const { datname } of rows) {
      if (!alive(Number(datname.split('_')[1]))) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {})
    }
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
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

// One migrated, empty embedded database per test process, copied for each test: creating a PGlite
// cluster takes about 3 s of CPU, loading a copy about 1 s.
let migratedPglite: Promise<Blob> | undefined
function pgliteTemplate(): Promise<Blob> {
  return migratedPglite ??= (async () => {
    const handle = await openDatabase({ pgliteDir: 'memory://' })
    try {
      await migrateToLatest(handle.db)
      return await handle.dumpDataDir!()
    } finally {
      await handle.close()
    }
  })()
}

// A migrated, empty database of the given kind, closed when the test ends.
export async function openTestDatabase(t: Teardown, kind: DbKind): Promise<DatabaseHandle> {
  const handle = kind === 'postgres'
    ? await openDatabase({ url: await createPostgresDatabase(t), poolMax: 5 })
    : await openDatabase({ pgliteDir: 'memory://', pgliteDataDir: await pgliteTemplate() })
  await migrateToLatest(handle.db)
  t.teardown(() => handle.close())
  return handle
}

export const testSecrets = {
  JWT_SECRET: 'test-access-secret-0123456789abcdefghijklmnopqrstuvwxyz',
  JWT_REFRESH_SECRET: 'test-refresh-secret-0123456789abcdefghijklmnopqrstuvwxyz'
}

export function testConfig(overrides: Partial<Config> = {}, env: Record<string, string> = {}): Config {
  // Load shedding is off unless a test turns it on: an in-process PGlite import stalls the test's own event loop.
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', SEED_SAMPLE_DATA: 'false', MAX_EVENT_LOOP_DELAY_MS: '0', ...testSecrets, ...env }, overrides)
}

export interface BuildOptions {
  config: Config
  db?: DatabaseHandle
  logger?: FastifyServerOptions['logger']
  // Observes every route as it is registered (the OpenAPI completeness test lists them this way).
  onRoute?: (route: { method: string | string[]; url: string; schema?: unknown }) => void
}

/** The server as server.ts builds it: Fastify with the app's options, the app registered as a plugin. */
export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const server = Fastify({ ...serverOptions(options.config), logger: options.logger ?? false }).withTypeProvider<TypeBoxTypeProvider>()
  if (options.onRoute) server.addHook('onRoute', options.onRoute)
  await server.register(fp(app, { name: 'app' }), { config: options.config, db: options.db })
  return server as unknown as FastifyInstance
}

export async function buildTestApp(t: Teardown, handle: DatabaseHandle, overrides: Partial<Config> = {}, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides, env), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

/** A loopback port free right now: for servers whose public address must be known before they listen. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
