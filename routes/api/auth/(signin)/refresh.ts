import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors, fail } from '../../../../schemas/common.ts'
import { RefreshBody, TokenPair } from '../../../../schemas/auth.ts'
import { HttpError } from '../../../../lib/errors.ts'
import { REFRESH_COOKIE } from '../../../../lib/auth/cookies.ts'
import { clearRefreshCookie, clearSessionMarker, MARKER_DESCRIPTION, tokenHeaders, setRefreshCookie } from '../shared.ts'

const refresh: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/refresh', {
    // The body is optional (the cookie may carry the token); an absent body validates as {}.
    preValidation: async (request) => { request.body ??= {} },
    schema: {
      tags: ['Auth'],
      operationId: 'refreshTokens',
      summary: 'Rotate the refresh token',
      description: 'Takes the refresh token from the body, or else from the refresh_token cookie, and answers a new access token and a new refresh token. ' +
        'Each refresh token works once: presenting one that was already rotated revokes its whole session (it was copied). Expired, forged or revoked tokens answer 401 "Invalid refresh token". ' +
        'A refusal of the cookie\'s token also clears the `has_session` marker (the pages then stop asking), and a copied token clears the refresh cookie too.',
      body: RefreshBody,
      response: {
        200: answer(TokenPair, 'A new access token and a new refresh token', tokenHeaders),
        ...errors(
          fail(400, 'The body is not JSON, or refreshToken is empty or too long', 'body/refreshToken must NOT have fewer than 1 characters'),
          {
            ...fail(401, 'The refresh token is missing, expired, forged, revoked or already used', 'Invalid refresh token'),
            headers: { 'set-cookie': { type: 'string', description: `When the token came from the cookie: clears the has_session marker (and the refresh cookie, when the token was already used). ${MARKER_DESCRIPTION}`, example: 'has_session=; Max-Age=0; Path=/; SameSite=Strict' } }
          },
          429, 503)
      }
    }
  }, async (request, reply) => {
    const fromBody = request.body?.refreshToken
    const result = await app.signin.refresh(fromBody ?? request.cookies[REFRESH_COOKIE], request.log)
    if (result.kind === 'reused') clearRefreshCookie(app, reply)
    // The cookie's session is over (or there is no cookie): the marker that made a page ask goes too.
    else if (result.kind !== 'ok' && fromBody === undefined) clearSessionMarker(app, reply)
    if (result.kind !== 'ok') throw new HttpError(401, 'Invalid refresh token')
    setRefreshCookie(app, reply, result.refreshToken)
    return { accessToken: result.accessToken, refreshToken: result.refreshToken }
  })
}

export default refresh
