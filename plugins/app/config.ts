import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../lib/config.ts'

// Registered first by app.ts itself, with the configuration it was given.
export const autoload = false

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export default fp(async function config (app: FastifyInstance, opts: { config: Config }) {
  app.decorate('config', opts.config)
  // `true` believes the left-most X-Forwarded-For address, which any client writes itself: rate limits
  // and sign-in blocks would then count whatever address a client names.
  if (opts.config.TRUST_PROXY?.trim() === 'true') {
    app.log.warn('TRUST_PROXY=true trusts the client-supplied left-most X-Forwarded-For address, so a client can choose its own address for rate limits and sign-in blocks; set TRUST_PROXY to the number of proxies in front (e.g. TRUST_PROXY=1) or to their addresses')
  }
}, { name: 'config' })
