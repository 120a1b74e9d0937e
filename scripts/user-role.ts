import { CliError, openMigratedDatabase, runCli } from './cli.ts'
import { setRole } from '../db/auth.ts'
import { publishChange } from '../lib/change-feed.ts'
import { PROFILE_CHANNEL } from '../lib/auth/profile-cache.ts'

const usage = 'usage: npm run user:role -- <providerId> ADMIN|USER'

await runCli(async () => {
  const [providerId, role] = process.argv.slice(2)
  if (!providerId || (role !== 'ADMIN' && role !== 'USER')) throw new CliError(usage, 2)
  const handle = await openMigratedDatabase()
  try {
    const userId = await setRole(handle.db, providerId, role)
    if (!userId) throw new CliError(`no user with provider id ${providerId} (users appear after their first sign-in)`)
    // Running servers notice the change by their poll of users.updated_at; with Redis, at once.
    await publishChange(process.env.REDIS_URL, PROFILE_CHANNEL, userId)
    console.log(`user ${providerId} is now ${role}`)
  } finally {
    await handle.close()
  }
})
