import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'

type Db = Kysely<Database>

export interface ApiKeyRow { id: string; name: string; prefix: string; guildIds: string[]; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null }

export async function createApiKey (db: Db, key: { name: string; keyHash: string; prefix: string; guildIds: string[] }): Promise<ApiKeyRow> {
  const row = await db.insertInto('api_keys').values({ name: key.name, key_hash: key.keyHash, prefix: key.prefix, guild_ids: key.guildIds })
    .returningAll().executeTakeFirstOrThrow()
  return toRow(row)
}

export async function listApiKeys (db: Db): Promise<ApiKeyRow[]> {
  const rows = await db.selectFrom('api_keys').selectAll().orderBy('created_at').orderBy('id').execute()
  return rows.map(toRow)
}

/** Revokes a key by id: the revoked key, or null when no live key has that id. */
export async function revokeApiKey (db: Db, id: string): Promise<ApiKeyRow | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return null
  const row = await db.updateTable('api_keys').set({ revoked_at: sql`now()` }).where('id', '=', id).where('revoked_at', 'is', null)
    .returningAll().executeTakeFirst()
  return row ? toRow(row) : null
}

/** The live key with this hash (its id and guilds), noting its use; null for an unknown or revoked key. */
export async function useApiKey (db: Db, keyHash: string): Promise<{ id: string; guildIds: string[] } | null> {
  const row = await db.updateTable('api_keys').set({ last_used_at: sql`now()` })
    .where('key_hash', '=', keyHash).where('revoked_at', 'is', null)
    .returning(['id', 'guild_ids']).executeTakeFirst()
  return row ? { id: row.id, guildIds: row.guild_ids } : null
}

const toRow = (r: { id: string; name: string; prefix: string; guild_ids: string[]; created_at: Date; last_used_at: Date | null; revoked_at: Date | null }): ApiKeyRow =>
  ({ id: r.id, name: r.name, prefix: r.prefix, guildIds: r.guild_ids, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at })
