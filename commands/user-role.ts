import { CliError, defineCommand, DATABASE_SETTINGS, openMigratedDatabase } from './cli.ts'
import { loadConfig } from '../lib/config.ts'
import { setRole } from '../db/auth.ts'

const usage = 'npm run user:role -- <providerId> ADMIN|USER'

export const command = defineCommand({
  name: 'user-role',
  opensDatabase: () => true,
  usage,
  positionals: ['<providerId>', 'ADMIN|USER'],
  help: `
Gives a user the ADMIN or the USER role. <providerId> is the user's id at the identity provider; users
appear after their first sign-in. Running servers take the change at once (the change bus).

options:
  -h, --help     show this help and exit

${DATABASE_SETTINGS}`
}, { options: {} }, async ({ positionals }, io) => {
  const providerId = positionals[0]
  // admin, Admin and ADMIN alike.
  const role = positionals[1]!.toUpperCase()
  if (role !== 'ADMIN' && role !== 'USER') throw new CliError(`the role must be ADMIN or USER, not ${JSON.stringify(positionals[1])}; usage: ${usage} (see --help)`, 2)
  const handle = await openMigratedDatabase(loadConfig(io.env))
  try {
    const userId = await setRole(handle.db, providerId!, role)
    if (!userId) throw new CliError(`no user with provider id ${providerId} (users appear after their first sign-in)`)
    io.stdout.write(`user ${providerId} is now ${role}\n`)
  } finally {
    await handle.close()
  }
})
