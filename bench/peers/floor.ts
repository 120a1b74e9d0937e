import Fastify from 'fastify'
import { fastifyRoutes, listenFastify } from './answers.ts'

// The floor of the benchmark: a bare Fastify 5 server sending our server's very answer, its bytes and
// every header our server sent with it (security, CORS, rate-limit, request id, cache validators …),
// all taken once from our server's answer and set from one object made at start-up. What the same
// answer costs with none of the work that makes those headers.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = Fastify({ logger: false })
fastifyRoutes(app, process.argv[2], { allHeaders: true })
await listenFastify(app)
