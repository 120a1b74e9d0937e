/** The commands that open the database, by name: what a server runs for a command beside it. */
export const databaseCommands: Record<string, () => Promise<{ command: unknown }>> = {
  import: () => import('./import.ts'),
  'import-activity': () => import('./import-activity.ts'),
  'seed-activity': () => import('./seed-activity.ts'),
  'user-role': () => import('./user-role.ts'),
  apikey: () => import('./apikey.ts'),
  migrate: () => import('./migrate.ts')
}
