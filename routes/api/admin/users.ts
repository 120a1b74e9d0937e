import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { AdminUser, AdminUserParams, AdminUsersQuery, AdminUsersResponse, RoleBody } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { isUuid, LastAdmin, liveSessions, searchUsers, setRole, userWithGuilds } from '../../../db/auth.ts'
import { bearer, userBody } from '../auth/shared.ts'

const admin = { role: 'ADMIN' } as const
const forbidden = fail(403, 'The caller\'s role is not ADMIN', 'Insufficient permissions')
const notFound = fail(404, 'No user with this id', 'User not found')

/** The admin API over users: role ADMIN only (as stored now, not as the token says). */
const users: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/users', {
    config: admin,
    schema: {
      tags: ['Admin'],
      operationId: 'adminSearchUsers',
      summary: 'Search users',
      description: 'Users whose username or provider id contains `q` (any case), by username; `limit` and `offset` page through them.',
      security: bearer,
      querystring: AdminUsersQuery,
      response: { 200: answer(AdminUsersResponse, 'A page of users'), ...errors(fail(400, 'A bad limit, offset or q', 'querystring/limit must be <= 1000'), 401, forbidden, 429, 503) }
    }
  }, async (request) => {
    const { q, limit, offset } = request.query
    const rows = await searchUsers(app.db, { q, limit, offset })
    return { users: rows.map(userBody), limit, offset }
  })

  app.get('/users/:id', {
    config: admin,
    schema: {
      tags: ['Admin'],
      operationId: 'adminGetUser',
      summary: 'One user with guilds and live sessions',
      description: 'The user record, the guild list stored at the latest sign-in, and the live sessions, newest first.',
      security: bearer,
      params: AdminUserParams,
      response: { 200: answer(AdminUser, 'The user with the stored guild list and live sessions'), ...errors(401, forbidden, notFound, 429, 503) }
    }
  }, async (request) => {
    const { id } = request.params
    const found = isUuid(id) ? await userWithGuilds(app.db, id) : undefined
    if (!found) throw new HttpError(404, 'User not found')
    const sessions = await liveSessions(app.db, id)
    return {
      user: { ...userBody(found.user), guilds: found.guilds.map((g) => ({ id: g.guild_id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions })) },
      sessions: sessions.map((s) => ({ id: s.id, createdAt: s.created_at.toISOString(), lastUsedAt: s.last_used_at.toISOString(), expiresAt: s.expires_at.toISOString(), userAgent: s.user_agent, ip: s.ip }))
    }
  })

  app.patch('/users/:id', {
    config: admin,
    schema: {
      tags: ['Admin'],
      operationId: 'adminSetRole',
      summary: 'Change a user\'s role',
      description: 'Effective at the user\'s next request on every instance, with the same access token. The last ADMIN cannot be demoted (409). Recorded as `role_changed` with `by: admin` and the acting admin.',
      security: bearer,
      params: AdminUserParams,
      body: RoleBody,
      response: {
        200: answer(AdminUsersResponse.properties.users.items, 'The user with the new role'),
        ...errors(fail(400, 'The role is not USER or ADMIN', 'body/role must be equal to one of the allowed values'), 401, forbidden, notFound, fail(409, 'The user is the last ADMIN', 'The last ADMIN cannot be demoted'), 429, 503)
      }
    }
  }, async (request) => {
    const { id } = request.params
    let changed: string | undefined
    try {
      changed = isUuid(id) ? await setRole(app.db, { id }, request.body.role, { by: 'admin', actorId: request.auth!.userId }) : undefined
    } catch (err) {
      if (err instanceof LastAdmin) throw new HttpError(409, err.message)
      throw err
    }
    if (!changed) throw new HttpError(404, 'User not found')
    app.profiles.invalidate(changed)
    const found = await userWithGuilds(app.db, changed)
    return userBody(found!.user)
  })

  app.delete('/users/:id/sessions', {
    config: admin,
    schema: {
      tags: ['Admin'],
      operationId: 'adminSignOutUser',
      summary: 'Sign a user out everywhere',
      description: 'Ends every session of the user at once on every instance. Recorded as `signout_all` and `session_revoked` with `by: admin` and the acting admin.',
      security: bearer,
      params: AdminUserParams,
      response: { 204: Type.Null({ description: 'Signed out; no body' }), ...errors(401, forbidden, notFound, 429, 503) }
    }
  }, async (request, reply) => {
    const { id } = request.params
    if (!isUuid(id) || !await userWithGuilds(app.db, id)) throw new HttpError(404, 'User not found')
    await app.signin.signOutAll(id, { actorId: request.auth!.userId })
    return reply.code(204).send(null)
  })
}

export default users
