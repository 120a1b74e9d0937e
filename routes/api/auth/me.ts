import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { answer, errors, ref } from '../../../schemas/common.ts'
import { Me } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import type { UserWithGuilds } from '../../../db/auth.ts'
import { bearer, userBody } from './shared.ts'

const me: FastifyPluginAsyncTypebox = async (app) => {
  // The body is serialized once per cached profile (by the route's own serializer) and dropped with it.
  const meBodies = new WeakMap<object, Buffer>()
  const sendMe = (reply: FastifyReply, found: UserWithGuilds): void => {
    let body = meBodies.get(found)
    if (body === undefined) {
      body = Buffer.from(reply.serialize({
        ...userBody(found.user),
        guilds: found.guilds.map((g) => ({ id: g.guild_id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions }))
      }) as string)
      meBodies.set(found, body)
    }
    reply.type('application/json; charset=utf-8').send(body)
  }

  app.get('/me', {
    schema: {
      tags: ['Auth'],
      operationId: 'getCurrentUser',
      summary: 'The signed-in user with the guild list',
      description: 'The caller\'s user record with the guild list stored at their latest sign-in.',
      security: bearer,
      response: { 200: answer(ref(Me), 'The signed-in user with the guild list'), ...errors(401, 429, 503) }
    }
  }, (request, reply) => {
    const userId = request.auth!.userId
    // A cached profile answers at once; only a miss waits for the database.
    const cached = app.profiles.peek(userId)
    if (cached) {
      sendMe(reply, cached)
      return
    }
    return app.profiles.get(userId).then((found) => {
      if (!found) throw new HttpError(401, 'Invalid token')
      sendMe(reply, found)
    })
  })
}

export default me
