import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { HttpError } from '../../lib/errors.ts'
import { RETURN_COOKIE } from '../../lib/auth/cookies.ts'
import { returnPath } from '../../lib/auth/return-path.ts'
import cookiePlugin from '../../plugins/external/cookie.ts'
import oauth2Plugin, { signinCookieOptions } from '../../plugins/external/oauth2.ts'
import { signInWithCode } from '../api/auth/shared.ts'

// Providers add parameters of their own (`iss`, `error`, `error_description`): they are let through.
const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  state: Type.Optional(Type.String({ maxLength: 256 }))
}, { additionalProperties: true })

/**
 * `GET /auth/callback`, the identity provider's redirect target (IDP_REDIRECT_URI) in every mode: it trades
 * the code as GET /api/auth/identity does (the same guard, session and refresh cookie), then sends the
 * browser on (303) to the path the sign-in remembered, whose page gets its access token through the cookie.
 * A sign-in that fails answers {error, message} with the sign-in's status, as the API does.
 */
const callback: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(cookiePlugin)
  await app.register(oauth2Plugin)
  // The sign-in routes' budget (AUTH_RATE_LIMIT_MAX), and its address holds the code: kept by no cache.
  app.addHook('preParsing', app.authRateLimit)
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    done()
  })

  // A HEAD would spend the code, as on the API's sign-in.
  app.get('/callback', { exposeHeadRoute: false, schema: { hide: true, querystring: CallbackQuery } }, async (request, reply) => {
    const remembered = request.cookies[RETURN_COOKIE]
    const unsigned = remembered === undefined ? null : request.unsignCookie(remembered)
    const target = returnPath(unsigned?.valid ? unsigned.value : undefined)
    reply.clearCookie(RETURN_COOKIE, signinCookieOptions(app))
    if (!request.query.code) throw new HttpError(400, 'The identity provider sent no code: the sign-in was cancelled or refused there')
    await signInWithCode(request, reply, { requireState: true })
    return reply.redirect(target, 303)
  })
}

export default callback
