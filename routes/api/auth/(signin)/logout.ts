import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../../lib/typebox.ts'
import { errors } from '../../../../schemas/common.ts'
import { bearer, clearRefreshCookie } from '../shared.ts'

const logout: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/logout', {
    config: { allowRevokedSession: true },
    schema: {
      tags: ['Auth'],
      operationId: 'logout',
      summary: 'Log out',
      description: 'Revokes the session of the access token (its access tokens stop working at once) and clears the refresh cookie and its `has_session` marker. Idempotent: a token whose session is already revoked also answers 204.',
      security: bearer,
      response: {
        204: Type.Null({
          description: 'Logged out; the refresh cookie and its marker are cleared',
          headers: { 'set-cookie': { type: 'string', description: 'Clears the refresh_token cookie and the has_session marker', example: 'refresh_token=; Max-Age=0; Path=/api/auth; HttpOnly' } }
        }),
        ...errors(401, 429, 503)
      }
    }
  }, async (request, reply) => {
    const { sessionId, userId } = request.auth!
    await app.signin.revoke(userId, sessionId, 'logout')
    clearRefreshCookie(app, reply)
    return reply.code(204).send(null)
  })
}

export default logout
