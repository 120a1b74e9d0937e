import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/index.ts'
import type { Database } from '../../db/types.ts'
import { seedSampleIfEmpty } from '../../db/sample/seed.ts'
import { seedDemoActivityIfEmpty } from '../../db/sample/activity.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Kysely<Database>
    dbHandle: DatabaseHandle
  }
}

export interface DbPluginOptions {
  // Tests hand in a database they opened; the app then leaves closing it to them.
  handle?: DatabaseHandle
}

export default fp(async function db(app: FastifyInstance, opts: DbPluginOptions) {
  const { config } = app
  const handle = opts.handle ?? await openDatabase({
    url: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    poolMax: config.DB_POOL_MAX,
    connectionTimeoutMillis: config.DB_CONNECTION_TIMEOUT_MS,
    statementTimeoutMillis: config.DB_STATEMENT_TIMEOUT_MS
  })
  if (!opts.handle) app.addHook('onClose', async () => { await handle.close() })
  const applied = await migrateToLatest(handle.db)
  if (applied.length) app.log.info({ migrations: applied }, 'database migrated')
  if (config.SEED_SAMPLE_DATA && handle.kind === 'pglite') {
    const summary = await seedSampleIfEmpty(handle)
    if (summary) app.log.info({ placemarks: summary.placemarks }, 'embedded database seeded with the sample dataset')
    const activity = await seedDemoActivityIfEmpty(handle)
    if (activity) app.log.info({ events: activity.events }, 'embedded database seeded with demo guild activity')
  }
  app.decorate('db', handle.db)
  app.decorate('dbHandle', handle)
}, { name: 'db', dependencies: ['config'] })
