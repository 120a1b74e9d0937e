import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * API keys of the guilds' bots for POST /api/activity: stored as the SHA-256 of the key (the key itself
 * is shown once, at creation), each scoped to a list of guilds, revocable.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE api_keys (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL,
    key_hash text NOT NULL UNIQUE,
    prefix text NOT NULL,
    guild_ids text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz
  )`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS api_keys`.execute(db)
}
