import Fastify from 'fastify'
import closeWithGrace from 'close-with-grace'
import fp from 'fastify-plugin'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import app, { compileSchemasInBackground, serverOptions } from './app.ts'
import { ConfigError, loadConfig } from './lib/config.ts'
import { EnvFileError, loadEnvFile } from './lib/env-file.ts'
import { keepDevelopmentSecrets } from './lib/dev-secrets.ts'
import { browserUrl, startupMessage } from './lib/logger.ts'
import { serverArguments } from './lib/server-usage.ts'
import { warmUpNextTick } from './lib/next-tick-warm-up.ts'

const BACKGROUND_COMPILE_DELAY_MS = 1000

async function main (): Promise<void> {
  const asked = serverArguments(process.argv.slice(2))
  if (asked) {
    (asked.code === 0 ? process.stdout : process.stderr).write(asked.text)
    process.exit(asked.code)
  }
  // Before the logger and the plugins schedule their first ticks (lib/next-tick-warm-up.ts: Node 20 only).
  await warmUpNextTick()
  let config
  try {
    // .env fills in what the environment does not set; the environment wins.
    loadEnvFile()
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError || err instanceof EnvFileError) {
      console.error(`error: ${err.message}`)
      process.exit(1)
    }
    throw err
  }
  // Development keeps its generated signing secrets in ./data, so a restart signs no one out.
  const kept = keepDevelopmentSecrets(config)
  config = kept.config
  const options = serverOptions(config)
  const server = Fastify(options).withTypeProvider<TypeBoxTypeProvider>()
  // fastify-plugin: the app's decorators stay visible on the server (graceful shutdown, plugins added here).
  await server.register(fp(app, { name: 'app' }), { config })
  if (kept.file) server.log.info(`JWT_SECRET / JWT_REFRESH_SECRET not set: development secrets kept in ${kept.file} (tokens survive a restart)`)
  // One shutdown: close-with-grace turns SIGTERM, SIGINT and a crash into server.close() (which stops new
  // connections, lets answers in progress finish and drain: plugins/app/connections.ts), and exits when
  // it is done, or after SHUTDOWN_GRACE_MS and a little more if something still holds on.
  closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS + 2000, logger: false, onTimeout: () => server.log.error('shutdown took too long; exiting') },
    async ({ signal, err }) => {
      if (err) server.log.error({ err }, 'unexpected error: shutting down')
      else server.log.info({ signal }, 'shutting down: finishing in-flight requests')
      await server.close()
    })
  await server.listen({ port: config.PORT, host: config.HOST })
  const base = browserUrl(process.env.PUBLIC_URL ? config.PUBLIC_URL : undefined, server.server.address())
  server.log.info(`${startupMessage(base, config.devIdp)} — dashboard ${base}/dashboard — map ${base}/map`)
  // Route schemas compile at their first use; those no request has needed yet compile a second from now,
  // between requests. Not at once: the first compile makes the validators' Ajv instance (some 50–100 ms
  // of one turn), which would hold up the first readiness probe, the request an orchestrator waits for.
  compileSchemasInBackground(options, BACKGROUND_COMPILE_DELAY_MS).then(
    (compiled) => server.log.debug({ compiled }, 'route schemas compiled'),
    (err: unknown) => server.log.error({ err }, 'a route schema does not compile: its route answers 500'))
}

main().catch((err: unknown) => {
  const { code, address, port } = err as { code?: string; address?: string; port?: number }
  const message = code === 'EADDRINUSE'
    ? `port ${port} on ${address} is already in use (is the server already running?); stop that process or choose another port: PORT=${(port ?? 8080) + 1} npm start`
    : err instanceof Error ? err.message : String(err)
  console.error(`error: the server could not start: ${message}`)
  process.exit(1)
})
