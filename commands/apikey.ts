import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey, parseGuildList } from '../lib/auth/api-keys.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../db/api-keys.ts'

const usage = 'npm run apikey -- create --name <name> --guilds <G1,G2,...> | list | revoke --id <key id>'

export const command = defineCommand({
  name: 'apikey',
  opensDatabase: () => true,
  usage,
  positionals: ['create|list|revoke'],
  help: `
Manages the API keys of the guilds' bots, which send activity events to POST /api/activity with the
header X-API-Key. A key may send events of its guilds only.

  create   makes a key for the guilds of --guilds, named --name; the key is printed once, alone on the
           first line of the output, and only its SHA-256 is stored: keep it, it cannot be shown again
  list     lists the keys: id, name, the key's first characters, guilds, created, last used, revoked
  revoke   revokes the key of --id at once, on every instance (its next request answers 401)

options:
  --name N       a name for the key (create), e.g. the bot's
  --guilds LIST  comma list of guild ids the key may send events of (create)
  --id ID        the key's id, as create and list show it (revoke)
  -h, --help     show this help and exit

${DATABASE_SETTINGS}`
}, {
  options: {
    name: { type: 'string' },
    guilds: { type: 'string' },
    id: { type: 'string' }
  }
}, async ({ positionals, values }, io) => {
  const action = positionals[0]
  if (action !== 'create' && action !== 'list' && action !== 'revoke') throw new CliError(`unknown action ${JSON.stringify(action)}; usage: ${usage} (see --help)`, 2)
  let guilds: string[] = []
  if (action === 'create') {
    const name = values.name?.trim()
    if (!name || name.length > 100) throw new CliError('create needs --name (1 to 100 characters) (see --help)', 2)
    const parsed = parseGuildList(values.guilds ?? '')
    if (typeof parsed === 'string') throw new CliError(`create needs --guilds: ${parsed} (see --help)`, 2)
    guilds = parsed
  }
  if (action === 'revoke' && !values.id) throw new CliError('revoke needs --id (see --help)', 2)
  const handle = await openMigratedDatabase(loadConfig(io.env))
  try {
    if (action === 'create') {
      const key = generateApiKey()
      const row = await createApiKey(handle.db, { name: values.name!.trim(), keyHash: hashApiKey(key), prefix: apiKeyPrefix(key), guildIds: guilds })
      io.stdout.write(`${key}\n`)
      io.stderr.write(`created API key ${row.id} "${row.name}" for guilds ${row.guildIds.join(', ')}; the key above is shown only this once\n`)
    } else if (action === 'list') {
      const rows = await listApiKeys(handle.db)
      if (rows.length === 0) io.stdout.write('no API keys\n')
      for (const r of rows) {
        io.stdout.write(`${[r.id, r.name, `${r.prefix}…`, r.guildIds.join(','), `created ${r.createdAt.toISOString()}`,
          r.lastUsedAt ? `last used ${r.lastUsedAt.toISOString()}` : 'never used', r.revokedAt ? `REVOKED ${r.revokedAt.toISOString()}` : 'active'].join('\t')}\n`)
      }
    } else {
      const row = await revokeApiKey(handle.db, values.id!)
      if (!row) throw new CliError(`no active API key with id ${values.id}`)
      io.stdout.write(`revoked API key ${row.id} "${row.name}"\n`)
    }
  } finally {
    await handle.close()
  }
})
