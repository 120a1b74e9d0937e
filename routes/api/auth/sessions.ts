import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { SessionParams, SessionsResponse, SignOutQuery } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { liveSessions } from '../../../db/auth.ts'
import { bearer, markerCookieOptions } from './shared.ts'
import { fastifyCookie } from '@fastify/cookie'
import { SESSION_MARKER_COOKIE } from '../../../lib/auth/cookies.ts'

const sessions: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/sessions', {
    schema: {
      tags: ['Auth'],
      operationId: 'listSessions',
      summary: 'The caller\'s live sessions',
      description: 'Sessions that are neither revoked nor expired, newest first; `current` marks the one making this request.',
      security: bearer,
      response: { 200: answer(SessionsResponse, 'The caller\'s live sessions, newest first'), ...errors(401, 429, 503) }
    }
  }, async (request) => {
    const rows = await liveSessions(app.db, request.auth!.userId)
    return {
      sessions: rows.map((s) => ({
        id: s.id,
        createdAt: s.created_at.toISOString(),
        lastUsedAt: s.last_used_at.toISOString(),
        expiresAt: s.expires_at.toISOString(),
        userAgent: s.user_agent,
        ip: s.ip,
        current: s.id === request.auth!.sessionId
      }))
    }
  })

  app.delete('/sessions', {
    schema: {
      tags: ['Auth'],
      operationId: 'signOutEverywhere',
      summary: 'Sign out everywhere, or everywhere else',
      description: 'Ends every session of the caller (`scope=all`, the default, this one included) or every one but the current (`scope=others`). ' +
        'The ended sessions\' access tokens stop working at once on every instance and their refresh tokens are refused. Recorded in the security history. ' +
        'With `scope=all` the answer also clears this browser\'s `has_session` marker (its session is over).',
      security: bearer,
      querystring: SignOutQuery,
      response: {
        204: Type.Null({
          description: 'Signed out; no body',
          headers: { 'set-cookie': { type: 'string', description: 'With scope=all: clears the has_session marker', example: 'has_session=; Max-Age=0; Path=/; SameSite=Strict' } }
        }),
        ...errors(fail(400, 'An unknown scope', 'querystring/scope must be equal to one of the allowed values'), 401, 429, 503)
      }
    }
  }, async (request, reply) => {
    const { userId, sessionId } = request.auth!
    const others = request.query.scope === 'others'
    await app.signin.signOutAll(userId, others ? { except: sessionId } : {})
    // This scope has no cookie plugin (bearer routes read no cookie): the marker's clearing is written as is.
    if (!others) reply.header('set-cookie', fastifyCookie.serialize(SESSION_MARKER_COOKIE, '', { ...markerCookieOptions(app), maxAge: 0, expires: new Date(0) }))
    return reply.code(204).send(null)
  })

  app.delete('/sessions/:id', {
    schema: {
      tags: ['Auth'],
      operationId: 'revokeSession',
      summary: 'Revoke one of the caller\'s sessions',
      description: 'Its access tokens stop working at once and its refresh token is refused. A session that is not the caller\'s, or does not exist, answers 404.',
      security: bearer,
      params: SessionParams,
      response: {
        204: Type.Null({ description: 'Revoked (or already revoked); no body' }),
        ...errors(401, fail(404, 'The caller has no session with this id', 'Session not found'), 429, 503)
      }
    }
  }, async (request, reply) => {
    if (!await app.signin.revoke(request.auth!.userId, request.params.id, 'revoked by user')) throw new HttpError(404, 'Session not found')
    return reply.code(204).send(null)
  })
}

export default sessions
