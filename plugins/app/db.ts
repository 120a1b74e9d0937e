import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { migrateDatabase, openDatabase, type DatabaseHandle } from '../../db/index.ts'
import { EmbeddedDatabaseInUse } from '../../db/embedded-lock.ts'
import type { Database } from '../../db/types.ts'
import { datasetAndActivityPresent, seedSampleIfEmpty } from '../../db/sample/seed.ts'
import { seedDemoActivityIfEmpty } from '../../db/sample/activity.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    dbHandle: DatabaseHandle
    // This server opened the embedded database itself (its directory's owner), rather than being given a handle.
    ownsEmbeddedDatabase: boolean
  }
}

export interface DbPluginOptions {
  // Tests hand in a database they opened; the app then leaves closing it to them.
  handle?: DatabaseHandle
}

/**
 * Fastify gives each plugin pluginTimeout ms and then fails with a message that blames the code. The
 * first start on the embedded database (creating, migrating and seeding it) is the one step here that
 * a slow or busy machine can stretch that far, so it is given up earlier, naming the cause. Fastify's
 * clock starts before this plugin's modules are loaded, hence the margin (a tenth, at least 5 s).
 */
async function beforePluginTimeout<T> (app: FastifyInstance, work: Promise<T>, cause: () => string): Promise<T> {
  const budget = app.initialConfig.pluginTimeout ?? 0
  if (!budget) return work
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(cause())), budget - Math.min(Math.max(budget * 0.1, 5000), budget / 2))
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}

interface StartingData {
  seeded: { placemarks?: number; events?: number }
  present: { dataset: boolean; activity: boolean }
  // The embedded database, with SEED_SAMPLE_DATA off.
  unseeded: boolean
}

/** The start-up log's one line about the data: what was seeded, or what is missing and how to load it. */
function startingDataLine ({ seeded, present, unseeded }: StartingData): string | null {
  const samples = [
    seeded.placemarks !== undefined && `the sample dataset (${seeded.placemarks} placemarks)`,
    seeded.events !== undefined && `demo guild activity (${seeded.events} events)`
  ].filter(Boolean)
  if (samples.length) return `seeded the embedded database with ${samples.join(' and ')}`
  if (present.dataset && present.activity) return null
  const missing = [!present.dataset && 'no dataset', !present.activity && 'no activity'].filter(Boolean)
  const loads = [
    !present.dataset && 'placemarks with `npm run import -- <file.kml|file.kmz>`',
    !present.activity && 'activity with `npm run import:activity -- <file.ndjson>` or `npm run seed:activity`'
  ].filter(Boolean)
  const why = unseeded ? ', and nothing seeded (SEED_SAMPLE_DATA=true seeds the sample data)' : ''
  return `${missing.join(' and ')} yet${why}: load ${loads.join(' and ')}`
}

export default fp(async function db (app: FastifyInstance, opts: DbPluginOptions) {
  const { config } = app
  const embedded = opts.handle ? opts.handle.kind === 'pglite' : !config.DATABASE_URL
  const what = embedded ? `the embedded database in ${config.PGLITE_DIR}` : 'the database at DATABASE_URL'
  let step = 'opening'
  // Each step's failure names the step and the database; a refusal by the directory's owner lock is
  // complete as it is.
  const stepFailed = (err: unknown): never => {
    if (err instanceof EmbeddedDatabaseInUse) throw err
    throw new Error(`${step} ${what} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  const prepare = async (): Promise<DatabaseHandle> => {
    const handle = opts.handle ?? await openDatabase({
      url: config.DATABASE_URL,
      listenUrl: config.DATABASE_LISTEN_URL,
      pgliteDir: config.PGLITE_DIR,
      poolMax: config.DB_POOL_MAX,
      connectionTimeoutMillis: config.DB_CONNECTION_TIMEOUT_MS,
      statementTimeoutMillis: config.DB_STATEMENT_TIMEOUT_MS,
      queryTimeoutMillis: config.DB_QUERY_TIMEOUT_MS ?? (config.DB_STATEMENT_TIMEOUT_MS ? config.DB_STATEMENT_TIMEOUT_MS + 5000 : 0),
      owner: 'the server',
      pgliteSharedBuffersMb: config.PGLITE_SHARED_BUFFERS_MB,
      onStaleLock: (previous) => app.log.warn({ previousOwner: previous }, `took over ${what}: its previous owner (pid ${previous.pid}) is no longer running`)
    }).catch(stepFailed)
    if (!opts.handle) app.addHook('onClose', async () => { await handle.close() })
    step = 'migrating'
    const applied = await migrateDatabase(handle).catch(stepFailed)
    if (applied.length) app.log.info({ migrations: applied }, 'database migrated')
    const seeded: StartingData['seeded'] = {}
    if (config.SEED_SAMPLE_DATA && handle.kind === 'pglite') {
      step = 'seeding'
      seeded.placemarks = (await seedSampleIfEmpty(handle).catch(stepFailed))?.placemarks
      seeded.events = (await seedDemoActivityIfEmpty(handle).catch(stepFailed))?.events
    }
    step = 'reading'
    const present = await datasetAndActivityPresent(handle).catch(stepFailed)
    const line = startingDataLine({ seeded, present, unseeded: handle.kind === 'pglite' && !config.SEED_SAMPLE_DATA })
    if (line) app.log.info(seeded, line)
    return handle
  }
  const seconds = (app.initialConfig.pluginTimeout ?? 0) / 1000
  const handle = await beforePluginTimeout(app, prepare(), () => `${what} was not ready within ${seconds} s: ${step} it took too long (a slow or busy disk?)`)
  app.decorate('db', handle.db)
  app.decorate('dbHandle', handle)
  app.decorate('ownsEmbeddedDatabase', !opts.handle && handle.kind === 'pglite')
}, { name: 'db', dependencies: ['config'] })
