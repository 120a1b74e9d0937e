import { commandLine, DATABASE_SETTINGS, runCli, openMigratedDatabase } from './cli.ts'

commandLine({
  usage: 'npm run migrate',
  help: `
Brings the database up to the latest schema (the server does the same when it starts).

options:
  -h, --help     show this help and exit

${DATABASE_SETTINGS}`
}, { options: {} })

await runCli(async () => {
  const handle = await openMigratedDatabase()
  console.error(`database migrated (${handle.kind})`)
  await handle.close()
})
