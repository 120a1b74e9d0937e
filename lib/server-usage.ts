/**
 * What `npm start -- --help` prints. The server takes no arguments: its settings come from the environment,
 * or from `.env` in the current directory (the environment wins).
 */
export const SERVER_HELP = `usage: npm start            (node --import ./scripts/typescript.mjs server.ts)

Serves the API, its docs (/api/docs), the map page (/map) and the development sign-in. With no settings it
listens on port 8080 and keeps its data in an embedded database (./data/pglite), seeded with sample data
on the first start.

The server takes no arguments; settings come from the environment, or from .env in the current directory
(the environment wins). The ones most often set:
  PORT, HOST          where to listen (default 8080 on localhost; HOST=0.0.0.0 for every interface)
  DATABASE_URL        PostgreSQL instead of the embedded database
  REDIS_URL           shared state (rate limits, sign-in blocks) for several instances
  DB_POOL_MAX         PostgreSQL connections (default: twice the cores plus one, at most 10)
  LOG_LEVEL           fatal, error, warn, info (default), debug, trace or silent
  NODE_ENV=production with IDP_* and JWT_* set: the real identity provider and signing secrets

Every setting, with its default: .env.example and docs/configuration.md.
Other commands (each with --help): npm run import, migrate, user:role, apikey, import:activity,
seed:activity, generate:kml, bench.
`

/** The server's answer to its command line: help (exit 0), a mistake (exit 2), or null to start. */
export function serverArguments (args: string[]): { code: 0 | 2; text: string } | null {
  if (args.length === 0) return null
  if (args.includes('--help') || args.includes('-h')) return { code: 0, text: SERVER_HELP }
  return { code: 2, text: `error: the server takes no arguments (got ${JSON.stringify(args[0])}); settings come from the environment or .env (see --help)\n` }
}
