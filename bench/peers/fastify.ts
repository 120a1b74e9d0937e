import Fastify from 'fastify'
import { fastifyRoutes, listenFastify } from './answers.ts'

// A bare Fastify 5 peer of the benchmark: default options, one route per path, answers from memory.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = Fastify({ logger: false })
fastifyRoutes(app, process.argv[2])
await listenFastify(app)
