import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import pg from 'pg'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import app, { serverOptions } from '../app.ts'
import { loadConfig, type Config } from '../lib/config.ts'
import { Migrator } from '../db/kysely.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/index.ts'
import { migrations } from '../db/migrations/index.ts'
import { openKmlSource } from '../lib/kml/source.ts'
import { importPlacemarks } from '../db/placemark-import.ts'
import { seedSample } from '../db/sample/seed.ts'
import { seedDemoActivityIfEmpty } from '../db/sample/activity.ts'

export const projectRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..')
// The loader every npm script gives to `node --import` (Node's own type stripping where Node has it, tsx on
// Node 20), by its full address. The tests run on it too (`.taprc`), and so does every process they start:
// on Node 24 no process pays for a loader thread, and the coverage reads the sources as they are (stripping
// only blanks the types, so every position stays where it was); on Node 20 tsx's source maps map them.
export const typescriptLoader = pathToFileURL(resolve(projectRoot, 'scripts', 'typescript.mjs')).href
export const vegasKmz = resolve(projectRoot, '..', 'shared', 'data', 'vegas-shooting-map.kmz')
export const vegasAbsent = existsSync(vegasKmz) ? false : `the shared test dataset is absent: ${vegasKmz}`

/** Imports the shared Vegas KMZ (545 placemarks, names in Los Angeles time) into a test database. */
export async function importVegas (handle: DatabaseHandle): Promise<void> {
  const source = await openKmlSource(vegasKmz)
  try {
    await importPlacemarks(handle, source.chunks, { timeZone: 'America/Los_Angeles', source: 'vegas.kmz', icons: source.icons, skippedIcons: source.skippedIcons })
  } finally {
    await source.close()
  }
}

// The project's own KMZ (examples/build-field-notes.ts): 250 placemarks in folders, icons in the archive, KML times.
export const fieldNotesKmz = resolve(projectRoot, 'examples', 'field-notes.kmz')

/** Imports the project's own example KMZ (names in Los Angeles time) into a test database. */
export async function importFieldNotes (handle: DatabaseHandle): Promise<void> {
  const source = await openKmlSource(fieldNotesKmz)
  try {
    await importPlacemarks(handle, source.chunks, { timeZone: 'America/Los_Angeles', source: 'field-notes.kmz', icons: source.icons, skippedIcons: source.skippedIcons })
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
 * when the test ends: empty, or (migrated) a copy of the run's migrated template, which costs the
 * server a file copy instead of every migration. A test process killed before its teardown (a timeout)
 * leaves its database behind: the next call drops every such database whose process is gone.
 */
export async function createPostgresDatabase (t: Teardown, options: { migrated?: boolean; sample?: boolean } = {}): Promise<string> {
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`
  const template = options.migrated || options.sample ? await migratedTemplate(options.sample) : null
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    const { rows } = await admin.query<{ datname: string }>(String.raw`SELECT datname FROM pg_database WHERE datname ~ '^test_\d+_[0-9a-f]{8}$'`)
    for (const { datname } of rows) {
      if (!alive(Number(datname.split('_')[1]))) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {})
    }
    await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`)
  } finally {
    await admin.end()
  }
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await c.end()
  })
  return databaseUrl(name)
}

function databaseUrl (name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * The run's templates: `test_template_<hash of the migration files>`, migrated and empty, and
 * `test_sample_<hash>_<day>`, that plus the sample placemarks and the demo guild activity (which ends
 * at the moment it is made, hence one a day). Each is made once by whichever test process needs it
 * first (under an advisory lock, so concurrent test processes wait for the one that builds it) and
 * kept between runs; templates of other migrations or days are dropped.
 */
const templates = new Map<string, Promise<string>>()
function migratedTemplate (sample = false): Promise<string> {
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '')
  const name = sample ? `test_sample_${schemaHash()}_${day}` : `test_template_${schemaHash()}`
  let made = templates.get(name)
  if (!made) {
    made = makeTemplate(name, sample ? 'test\\_sample\\_%' : 'test\\_template\\_%', async (url) => {
      const handle = await openDatabase({ url, poolMax: 1 })
      try {
        await migrateToLatest(handle.db)
        if (sample) {
          await seedSample(handle)
          await seedDemoActivityIfEmpty(handle)
        }
      } finally {
        await handle.close()
      }
    }, sample ? migratedTemplate() : null)
    templates.set(name, made)
  }
  return made
}

// Templates of other schemas kept (several checkouts of the project may share the server).
const KEPT_TEMPLATES = 4

async function makeTemplate (name: string, family: string, fill: (url: string) => Promise<void>, from: Promise<string> | null): Promise<string> {
  const base = from ? await from : null
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [family])
    // Newest first: the templates of other schemas (other checkouts, earlier runs) beyond the few
    // newest are dropped; one in use by a concurrent run of another checkout is left alone.
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE '${family}' ORDER BY oid::bigint DESC`)
    for (const { datname } of rows.filter((r) => r.datname !== name).slice(KEPT_TEMPLATES)) {
      await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => {})
    }
    if (!rows.some((r) => r.datname === name)) {
      // Built under another name and renamed when whole: a process killed midway leaves no half template.
      const building = `${name}_building`
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)
      await admin.query(`CREATE DATABASE ${building}${base ? ` TEMPLATE ${base}` : ''}`)
      await fill(databaseUrl(building))
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`)
    }
    return name
  } finally {
    await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [family]).catch(() => {})
    await admin.end()
  }
}

// One migrated, empty embedded database per schema, copied for each test: creating a PGlite cluster
// costs about 3 s of CPU, loading a copy about 1 s. The copy is kept in the system's temporary folder
// between test processes and runs, named after the migrations and the PGlite version.
let migratedPglite: Promise<Blob> | undefined
function pgliteTemplate (): Promise<Blob> {
  return (migratedPglite ??= (async () => {
    const file = resolve(tmpdir(), `placemark-guild-pglite-${schemaHash()}-${pgliteVersion()}.tar`)
    if (existsSync(file)) return new Blob([readFileSync(file)])
    const handle = await openDatabase({ pgliteDir: 'memory://' })
    try {
      await migrateToLatest(handle.db)
      const dump = await handle.dumpDataDir!()
      // Written whole, then renamed: a reader never sees half a file.
      const partial = `${file}.${process.pid}`
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
      renameSync(partial, file)
      return dump
    } finally {
      await handle.close()
    }
  })())
}

// The migration files' contents, and the one module outside their folder that they take statements from
// (migration 025's tile counts; the import counts with it too), hashed: a template of another schema is never used.
function schemaHash (): string {
  const dir = resolve(projectRoot, 'db', 'migrations')
  const hash = createHash('sha256')
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(resolve(dir, file)))
  hash.update(readFileSync(resolve(projectRoot, 'db', 'tile-cells.ts')))
  return hash.digest('hex').slice(0, 12)
}

const pgliteVersion = (): string => (JSON.parse(readFileSync(resolve(projectRoot, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string }).version

export interface TestDatabaseOptions {
  kind?: DbKind
  // The sample placemarks (db/sample/sample.kml) and the demo guild activity, as a first embedded start has them.
  sample?: boolean
}

/**
 * A migrated database of the given kind (PostgreSQL unless said otherwise), empty or with the sample
 * data, closed when the test ends.
 */
export async function openTestDatabase (t: Teardown, options: DbKind | TestDatabaseOptions = {}): Promise<DatabaseHandle> {
  const { kind = 'postgres', sample = false } = typeof options === 'string' ? { kind: options } : options
  const handle = kind === 'postgres'
    ? await openDatabase({ url: await createPostgresDatabase(t, { migrated: true, sample }), poolMax: 5 })
    : await openDatabase({ pgliteDir: 'memory://', pgliteDataDir: await pgliteTemplate() })
  t.teardown(() => handle.close())
  if (sample && kind === 'pglite') {
    await seedSample(handle)
    await seedDemoActivityIfEmpty(handle)
  }
  return handle
}

export const testSecrets = {
  JWT_SECRET: 'test-access-secret-0123456789abcdefghijklmnopqrstuvwxyz',
  JWT_REFRESH_SECRET: 'test-refresh-secret-0123456789abcdefghijklmnopqrstuvwxyz'
}

/** A production start's identity provider and public address (the secrets are each test's to choose). */
export const productionSettings = {
  NODE_ENV: 'production',
  IDP_CLIENT_ID: 'c',
  IDP_CLIENT_SECRET: 's',
  IDP_REDIRECT_URI: 'https://app.example/cb',
  IDP_AUTHORIZE_URL: 'https://idp.example/a',
  IDP_TOKEN_URL: 'https://idp.example/t',
  IDP_USER_URL: 'https://idp.example/u',
  IDP_GUILDS_URL: 'https://idp.example/g',
  PUBLIC_URL: 'https://api.example'
}

export function testConfig (overrides: Partial<Config> = {}, env: Record<string, string> = {}): Config {
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
export async function buildApp (options: BuildOptions): Promise<FastifyInstance> {
  const server = Fastify({ ...serverOptions(options.config), logger: options.logger ?? false }).withTypeProvider<TypeBoxTypeProvider>()
  if (options.onRoute) server.addHook('onRoute', options.onRoute)
  await server.register(fp(app, { name: 'app' }), { config: options.config, db: options.db })
  return server as unknown as FastifyInstance
}

export async function buildTestApp (t: Teardown, handle: DatabaseHandle, overrides: Partial<Config> = {}, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides, env), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

export { freePort } from '../lib/free-port.ts'

/** An empty database of the kind, closed when the test ends, and a step that migrates it up to a named migration. */
export async function unmigratedDatabase (t: Teardown, kind: DbKind): Promise<{ handle: DatabaseHandle; step: (target: string) => Promise<void> }> {
  const handle = kind === 'postgres'
    ? await openDatabase({ url: await createPostgresDatabase(t), poolMax: 2 })
    : await openDatabase({ pgliteDir: 'memory://' })
  t.teardown(() => handle.close())
  const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } })
  const step = async (target: string) => {
    const { error } = await migrator.migrateTo(target)
    if (error) throw error
  }
  return { handle, step }
}
