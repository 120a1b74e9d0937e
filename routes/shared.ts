import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * `/shared/*`: the modules every page imports (public/shared: the session client), served as they are
 * written: each page's script imports them as `../shared/<name>.js`.
 */
const shared: FastifyPluginAsync = async (app) => {
  await app.register(fastifyStatic, { root: join(root, 'public', 'shared'), prefix: '/shared/', decorateReply: false, index: false })
}

export default shared
