import { defineCommand, DATABASE_SETTINGS, openMigratedDatabase } from './cli.ts'
import { loadConfig } from '../lib/config.ts'

export const command = defineCommand({
  name: 'migrate',
  opensDatabase: () => true,
  usage: 'npm run migrate',
  help: `
Brings the database up to the latest schema (the server does the same when it starts).

options:
  -h, --help     show this help and exit

${DATABASE_SETTINGS}`
}, { options: {} }, async (_args, io) => {
  const handle = await openMigratedDatabase(loadConfig(io.env))
  io.stderr.write(`database migrated (${handle.kind})\n`)
  await handle.close()
})
