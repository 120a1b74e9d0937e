import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

// Every instance polls the users changed since its last look (to drop cached profiles): index the time.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX users_updated_idx ON users (updated_at)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS users_updated_idx`.execute(db)
}
