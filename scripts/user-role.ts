import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { setRole } from '../db/auth.ts'

const usage = 'usage: npm run user:role -- <providerId> ADMIN|USER'

await runCli(async () => {
  const [providerId, role] = process.argv.slice(2)
  if (!providerId || (role !== 'ADMIN' && role !== 'USER')) throw new CliError(usage, 2)
  const handle = await openMigratedDatabase()
  try {
    if (!(await setRole(handle.db, providerId, role))) throw new CliError(`no user with provider id ${providerId} (users appear after their first sign-in)`)
    console.log(`user ${providerId} is now ${role}`)
  } finally {
    await handle.close()
  }
})
