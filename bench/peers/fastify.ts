import Fastify from 'fastify'
import { byPath, readAnswers } from './answers.ts'

// A bare Fastify 5 peer of the benchmark: default options, one route per path, answers from memory.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = Fastify({ logger: false })
for (const [path, answers] of byPath(readAnswers(process.argv[2]))) {
  app.get(path, (request, reply) => {
    const answer = answers.get(request.url)
    if (!answer) return reply.code(404).send()
    reply.type(answer.contentType).send(answer.body)
  })
}
await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address()
process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`)
