import Fastify from 'fastify'
import helmet from '@fastify/helmet'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import etag from '@fastify/etag'
import { fastifyRoutes, listenFastify } from './answers.ts'

// The Fastify stack a user would build for the same answers: Fastify 5 with @fastify/helmet,
// @fastify/cors, @fastify/rate-limit and @fastify/etag registered as their READMEs show them (each
// with its defaults; the rate limit's ceiling out of the load generator's way), one route per path,
// answers from memory. Argument: the answers file (see answers.ts). Prints its port once listening.
const app = Fastify({ logger: false })
await app.register(helmet)
await app.register(cors)
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: '1 minute' })
await app.register(etag)
fastifyRoutes(app, process.argv[2])
await listenFastify(app)
