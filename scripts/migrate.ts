import { runCli, openMigratedDatabase } from './cli.ts'

await runCli(async () => {
  const handle = await openMigratedDatabase()
  console.error(`database migrated (${handle.kind})`)
  await handle.close()
})
