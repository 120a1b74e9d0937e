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
}, { name: 'config' })
