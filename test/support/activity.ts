import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import type { StandInGuild, StandInIdp } from './idp-server.ts'
import type { DatabaseHandle } from '../../db/index.ts'
import { createApiKey } from '../../db/api-keys.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../lib/auth/api-keys.ts'

/** A new ingestion API key (named `bot`) for the guilds, stored; the key itself. */
export async function ingestionKey (handle: DatabaseHandle, guildIds: string[]): Promise<string> {
  const key = generateApiKey()
  await createApiKey(handle.db, { name: 'bot', keyHash: hashApiKey(key), prefix: apiKeyPrefix(key), guildIds })
  return key
}

/** Signs in through the stand-in provider as user `id` (username `p<id>`) with that guild list; the access token. */
export function guildSignIn (t: Test, app: FastifyInstance, idp: StandInIdp) {
  return async (id: string, guilds: StandInGuild[]): Promise<string> => {
    idp.user = { id, username: `p${id}`, discriminator: '1', avatar: null }
    idp.guilds = guilds
    const res = await app.inject('/api/auth/identity?code=ok')
    t.equal(res.statusCode, 200, `sign-in of ${id}`)
    return res.json().accessToken as string
  }
}
