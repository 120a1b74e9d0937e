import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

/**
 * The change bus: every change other instances must see (a new dataset version, a revoked or deleted
 * session, a written or deleted user) is written to change_log and announced with NOTIFY on the
 * `changes` channel, in the writing transaction, by triggers: whoever writes (a server, a command, an
 * operator by hand) announces it. Instances apply the notification at once and read the log as the
 * fallback when they may have missed one.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE change_log (
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    key text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
  )`.execute(db)
  await sql`CREATE INDEX change_log_at_idx ON change_log (at)`.execute(db)
  await sql`CREATE FUNCTION emit_change(change_kind text, change_key text) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO change_log (kind, key) VALUES (change_kind, change_key);
      PERFORM pg_notify('changes', json_build_object('kind', change_kind, 'key', change_key)::text);
    END $$`.execute(db)

  await sql`CREATE FUNCTION user_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM emit_change('user', (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END)::text);
      RETURN NULL;
    END $$`.execute(db)
  await sql`CREATE TRIGGER users_change AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION user_changed()`.execute(db)

  // A session stops when it is revoked or deleted while live; other updates (a refresh) are not changes.
  await sql`CREATE FUNCTION session_ended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM emit_change('session', OLD.id::text);
      RETURN NULL;
    END $$`.execute(db)
  await sql`CREATE TRIGGER sessions_revoked AFTER UPDATE OF revoked_at ON sessions FOR EACH ROW
    WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION session_ended()`.execute(db)
  await sql`CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions FOR EACH ROW
    WHEN (OLD.revoked_at IS NULL) EXECUTE FUNCTION session_ended()`.execute(db)

  await sql`CREATE FUNCTION dataset_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM emit_change('dataset', NEW.version::text);
      RETURN NULL;
    END $$`.execute(db)
  await sql`CREATE TRIGGER dataset_change AFTER INSERT OR UPDATE ON dataset FOR EACH ROW EXECUTE FUNCTION dataset_changed()`.execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS dataset_change ON dataset`.execute(db)
  await sql`DROP TRIGGER IF EXISTS sessions_deleted ON sessions`.execute(db)
  await sql`DROP TRIGGER IF EXISTS sessions_revoked ON sessions`.execute(db)
  await sql`DROP TRIGGER IF EXISTS users_change ON users`.execute(db)
  await sql`DROP FUNCTION IF EXISTS dataset_changed(), session_ended(), user_changed(), emit_change(text, text)`.execute(db)
  await sql`DROP TABLE IF EXISTS change_log`.execute(db)
}
