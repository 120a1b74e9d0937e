import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase, runAsProgram } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { setRole } from '../db/auth.ts'
import { publishChange } from '../lib/change-feed.ts'
import { PROFILE_CHANNEL } from '../lib/auth/profile-cache.ts'

const usage = 'npm run user:role -- <providerId> ADMIN|USER'

export const command = defineCommand({
  usage,
  positionals: ['<providerId>', 'ADMIN|USER'],
  help: `
Gives a user the ADMIN or the USER role. <providerId> is the user's id at the identity provider; users
appear after their first sign-in. Running servers take the change within REVOCATION_POLL_MS, at once
with Redis.

options:
  -h, --help     show this help and exit

${DATABASE_SETTINGS}
  REDIS_URL      Redis to announce the change on (default: unset, servers notice it by polling)`
}, { options: {} }, async ({ positionals }, io) => {
  const [providerId, role] = positionals
  if (role !== 'ADMIN' && role !== 'USER') throw new CliError(`the role must be ADMIN or USER, not ${JSON.stringify(role)}; usage: ${usage} (see --help)`, 2)
  const config = loadConfig(io.env)
  const handle = await openMigratedDatabase(config)
  try {
    const userId = await setRole(handle.db, providerId!, role)
    if (!userId) throw new CliError(`no user with provider id ${providerId} (users appear after their first sign-in)`)
    // Running servers notice the change by their poll of users.updated_at; with Redis, at once.
    await publishChange(config.REDIS_URL, PROFILE_CHANNEL, userId)
    io.stdout.write(`user ${providerId} is now ${role}\n`)
  } finally {
    await handle.close()
  }
})

await runAsProgram(command, import.meta.url)
