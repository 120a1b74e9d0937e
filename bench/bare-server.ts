import Fastify from 'fastify'
import { readFileSync } from 'node:fs'

// The baseline of the benchmark: a bare Fastify server answering from memory, on the same machine.
// Argument: a JSON file {"<path>": "<body>"} of the exact bytes to serve for each path.
const bodies = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Record<string, string>
const app = Fastify({ logger: false })
app.get('/const', async () => ({ hello: 'world' }))
for (const [path, body] of Object.entries(bodies)) {
  const bytes = Buffer.from(body)
  app.get(path, (_request, reply) => { reply.type('application/json; charset=utf-8').send(bytes) })
}
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })
process.stdout.write(`${address}\n`)
