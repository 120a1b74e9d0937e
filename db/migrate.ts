import type { Kysely } from 'kysely'
import { Migrator } from './kysely.ts'
import type { Database } from './types.ts'
import { migrations } from './migrations/index.ts'

export async function migrateToLatest (db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(String(error))
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
