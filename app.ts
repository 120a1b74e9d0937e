import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import autoload from '@fastify/autoload'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { fileURLToPath } from 'node:url'
import type { IncomingMessage } from 'node:http'
import { dirname, join } from 'node:path'
import type { Config } from './lib/config.ts'
import type { DatabaseHandle } from './db/index.ts'
import { loggerOptions, requestChildLogger } from './lib/logger.ts'
import { FrontDoor, clientAddressOf, requestIds } from './lib/front-door.ts'
import configPlugin from './plugins/config.ts'
import errorsPlugin from './plugins/errors.ts'
import corsPlugin from './plugins/cors.ts'
import swaggerPlugin from './plugins/swagger.ts'
import dbPlugin from './plugins/db.ts'
import responseCachePlugin from './plugins/response-cache.ts'
import boxIndexPlugin from './plugins/box-index.ts'
import redisPlugin from './plugins/redis.ts'
import rateLimitPlugin from './plugins/rate-limit.ts'
import frontDoorPlugin from './plugins/front-door.ts'
import authPlugin from './plugins/auth.ts'

const root = dirname(fileURLToPath(import.meta.url))
// The sources run as TypeScript through tsx's --import hook, which @fastify/autoload cannot detect by itself.
if (import.meta.url.endsWith('.ts')) process.env.FASTIFY_AUTOLOAD_TYPESCRIPT ??= '1'

export interface BuildOptions {
  config: Config
  // An already open database (tests); otherwise the app opens one from the configuration.
  db?: DatabaseHandle
  logger?: FastifyServerOptions['logger']
  // Observes every route as it is registered (the OpenAPI completeness test lists them this way).
  onRoute?: (route: { method: string | string[]; url: string; schema?: unknown }) => void
}

// TRUST_PROXY: true/false, a hop count, or a comma-separated list of proxy addresses/CIDRs.
export function trustProxySetting(value: string | undefined): FastifyServerOptions['trustProxy'] {
  if (value === undefined || value === '' || value === 'false') return false
  if (value === 'true') return true
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address: string, hop: number) => hop < hops
  }
  return value.split(',').map((s) => s.trim())
}

declare module 'fastify' {
  interface FastifyInstance {
    // The server's request handler in front of the router (see lib/front-door.ts).
    frontDoor: FrontDoor
    // A raw request's client address, as request.ip gives it under the trustProxy setting.
    clientAddress(req: IncomingMessage): string | undefined
    // The next request id, for requests answered before Fastify sees them.
    nextRequestId(): string
  }
}

export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options
  const trustProxy = trustProxySetting(config.TRUST_PROXY)
  const frontDoor = new FrontDoor()
  const nextRequestId = requestIds()
  const app = Fastify({
    logger: options.logger ?? loggerOptions(config.LOG_LEVEL),
    childLoggerFactory: requestChildLogger,
    genReqId: nextRequestId,
    serverFactory: frontDoor.serverFactory,
    trustProxy,
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: true, useDefaults: true, allErrors: false } },
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('frontDoor', frontDoor)
  app.decorate('clientAddress', clientAddressOf(trustProxy))
  app.decorate('nextRequestId', nextRequestId)
  if (options.onRoute) app.addHook('onRoute', options.onRoute)
  await app.register(configPlugin, { config })
  await app.register(errorsPlugin)
  await app.register(corsPlugin)
  await app.register(swaggerPlugin)
  await app.register(dbPlugin, { handle: options.db })
  await app.register(redisPlugin)
  await app.register(rateLimitPlugin)
  await app.register(frontDoorPlugin)
  await app.register(responseCachePlugin)
  await app.register(boxIndexPlugin)
  await app.register(authPlugin)
  await app.register(autoload, { dir: join(root, 'routes'), forceESM: true })
  return app
}
