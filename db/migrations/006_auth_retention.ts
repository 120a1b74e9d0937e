import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

// The retention rule deletes ended sessions and expired refresh-token records: index their ends.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX sessions_expires_idx ON sessions (expires_at)`.execute(db)
  await sql`CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS refresh_tokens_expires_idx`.execute(db)
  await sql`DROP INDEX IF EXISTS sessions_expires_idx`.execute(db)
}
