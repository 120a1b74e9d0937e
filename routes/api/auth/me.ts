import type { FastifyPluginAsyncTypebox, Static } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import type { FastifyReply } from 'fastify'
import { answer, errors, ref } from '../../../schemas/common.ts'
import { AccountExport, Me } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { accountExport, deleteAccount, type UserWithGuilds } from '../../../db/auth.ts'
import { eventBody } from '../../../lib/auth/history.ts'
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

  app.get('/me/export', {
    schema: {
      tags: ['Auth'],
      operationId: 'exportMyData',
      summary: 'Everything stored about the caller',
      description: 'The profile, the guild list, every stored session (live or ended, until SESSION_RETENTION; never token material) and the whole security history, as one JSON document.',
      security: bearer,
      response: { 200: answer(AccountExport, 'Everything stored about the caller'), ...errors(401, 429, 503) }
    }
  }, async (request, reply) => {
    const found = await accountExport(app.db, request.auth!.userId)
    if (!found) throw new HttpError(401, 'Invalid token')
    reply.header('content-disposition', 'attachment; filename="my-data.json"')
    const body = {
      user: userBody(found.user),
      guilds: found.guilds.map((g) => ({ id: g.guild_id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions })),
      sessions: found.sessions.map((s) => ({
        id: s.id,
        createdAt: s.created_at.toISOString(),
        lastUsedAt: s.last_used_at.toISOString(),
        expiresAt: s.expires_at.toISOString(),
        revokedAt: s.revoked_at?.toISOString() ?? null,
        revokedReason: s.revoked_reason,
        userAgent: s.user_agent,
        ip: s.ip
      })),
      history: found.history.map((row) => eventBody(row)),
      exportedAt: new Date().toISOString()
    }
    return body as Static<typeof AccountExport>
  })

  app.delete('/me', {
    schema: {
      tags: ['Auth'],
      operationId: 'deleteMyAccount',
      summary: 'Delete the caller\'s account',
      description: 'Deletes the caller\'s user record, guild list, sessions (their tokens stop working at once on every instance) and security history; one anonymous `account_deleted` event stays in the audit trail. ' +
        'The next sign-in creates a new account. Deleting the last ADMIN is allowed: `npm run user:role` names a new one.',
      security: bearer,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errors(401, 429, 503) }
    }
  }, async (request, reply) => {
    const { userId } = request.auth!
    // Every session of the account stops here at once; other instances hear of it on the change bus.
    for (const id of await deleteAccount(app.db, userId) ?? []) app.revocations.add(id)
    app.profiles.invalidate(userId)
    return reply.code(204).send(null)
  })
}

export default me
