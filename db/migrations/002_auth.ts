import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      provider_id text NOT NULL UNIQUE,
      username text NOT NULL,
      discriminator text NOT NULL DEFAULT '0',
      avatar text,
      role text NOT NULL DEFAULT 'USER' CHECK (role IN ('USER', 'ADMIN')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db)
  await sql`
    CREATE TABLE user_guilds (
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      guild_id text NOT NULL,
      name text NOT NULL,
      icon text,
      owner boolean NOT NULL DEFAULT false,
      permissions text NOT NULL DEFAULT '0',
      PRIMARY KEY (user_id, guild_id)
    )`.execute(db)
  await sql`
    CREATE TABLE sessions (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz,
      revoked_reason text,
      user_agent text,
      ip text
    )`.execute(db)
  await sql`CREATE INDEX sessions_user_idx ON sessions (user_id)`.execute(db)
  await sql`CREATE INDEX sessions_revoked_idx ON sessions (revoked_at) WHERE revoked_at IS NOT NULL`.execute(db)
  await sql`
    CREATE TABLE refresh_tokens (
      token_hash text PRIMARY KEY,
      session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      rotated_at timestamptz
    )`.execute(db)
  await sql`CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  for (const table of ['refresh_tokens', 'sessions', 'user_guilds', 'users']) {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db)
  }
}
