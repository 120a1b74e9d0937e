import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The security history: one row per event (sign-in, refresh-token reuse, revoked session, role change,
 * sign out everywhere, deleted account), written in the transaction of what it records. `user_id` is the
 * user the event is about (no foreign key: an account's deletion leaves one anonymous row), `actor_id`
 * the admin who acted, when one did. Never a token, code or secret: `data` holds addresses, user agents,
 * session ids and roles only.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE audit (
    id bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    type text NOT NULL,
    user_id uuid,
    actor_id uuid,
    data jsonb NOT NULL DEFAULT '{}'::jsonb
  )`.execute(db)
  await sql`CREATE INDEX audit_user_idx ON audit (user_id, id)`.execute(db)
  await sql`CREATE INDEX audit_type_idx ON audit (type, id)`.execute(db)
  await sql`CREATE INDEX audit_at_idx ON audit (at)`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS audit`.execute(db)
}
