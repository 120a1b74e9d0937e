import fp from 'fastify-plugin'
import Fastify, { type FastifyInstance } from 'fastify'
import { chmod } from 'node:fs/promises'
import { resolve } from 'node:path'
import { Type } from '../../lib/typebox.ts'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { placeCommandSocket, type CommandSocketPlace } from '../../db/embedded.ts'
import { runCommand, withDatabase, type Command } from '../../commands/cli.ts'
import { databaseCommands } from '../../commands/index.ts'

const CommandRequest = Type.Object({
  args: Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 64 }),
  cwd: Type.String({ minLength: 1, maxLength: 4096 }),
  isTTY: Type.Boolean()
}, { additionalProperties: false })

/**
 * The embedded database has one owner, the server; a command (npm run import, user:role, …) run beside
 * it is sent here and runs inside the server, on the server's own database, so that what it changes is
 * served at once. A Unix socket in a folder only this user may enter (see placeCommandSocket); its own small
 * Fastify instance, so that nothing of it is reachable over the network. Only for a server on an
 * embedded database in a directory.
 */
export default fp(async function commandSocket (app: FastifyInstance) {
  const dir = app.config.PGLITE_DIR
  if (app.dbHandle.kind !== 'pglite' || app.config.DATABASE_URL || dir.startsWith('memory://') || !app.ownsEmbeddedDatabase) return
  let place: CommandSocketPlace | undefined
  const server = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>()
  server.post('/commands/:name', { schema: { params: Type.Object({ name: Type.String({ maxLength: 64 }) }), body: CommandRequest } }, async (request, reply) => {
    const load = databaseCommands[request.params.name]
    if (!load) return reply.code(404).send({ error: 'Not Found', message: `no command ${request.params.name}` })
    const { command } = await load() as { command: Command<never> }
    const { args, cwd, isTTY } = request.body
    reply.hijack()
    const out = reply.raw
    out.writeHead(200, { 'content-type': 'application/x-ndjson' })
    const line = (value: object) => out.write(`${JSON.stringify(value)}\n`)
    app.log.info({ command: request.params.name }, 'running a command sent by a process beside the server')
    const code = await withDatabase(app.dbHandle, () => runCommand(command, args, {
      stdout: { write: (text: string) => line({ stdout: text }), isTTY },
      stderr: { write: (text: string) => line({ stderr: text }), isTTY },
      env: process.env,
      cwd
    }))
    line({ exit: code })
    out.end()
  })
  app.addHook('onReady', async () => {
    place = await placeCommandSocket(resolve(dir))
    await server.listen({ path: place.path })
    // Its folder already keeps others out; the socket's own mode says the same.
    await chmod(place.path, 0o600)
  })
  app.addHook('onClose', async () => {
    await server.close()
    await place?.remove()
  })
}, { name: 'command-socket', dependencies: ['config', 'db'] })
