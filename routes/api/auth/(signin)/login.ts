import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../../lib/typebox.ts'
import { errors, fail } from '../../../../schemas/common.ts'
import { RETURN_COOKIE } from '../../../../lib/auth/cookies.ts'
import { DEFAULT_RETURN_PATH, MAX_RETURN_PATH, returnPath } from '../../../../lib/auth/return-path.ts'
import { signinCookieOptions } from '../../../../plugins/external/oauth2.ts'

const LoginQuery = Type.Object({
  return: Type.Optional(Type.String({
    maxLength: MAX_RETURN_PATH,
    description: `The path (and query) of this server to go on to once signed in, e.g. the page that started the sign-in. Only a path starting with a single \`/\` is kept; anything else (an absolute or scheme-relative URL, a backslash, an escaped slash such as \`/%2F%2Fhost\`, a control character, a dot segment) means \`${DEFAULT_RETURN_PATH}\`: the sign-in never leaves this origin. Like every parameter, it is refused (400) with a NUL character, past ${MAX_RETURN_PATH} characters or given twice.`,
    examples: ['/dashboard?guildId=700000000000000001']
  }))
})

/** `GET /api/auth/identity/login`: a browser's sign-in starts here and comes back through /auth/callback. */
const login: FastifyPluginAsyncTypebox = async (app) => {
  const publicOrigin = new URL(app.config.PUBLIC_URL)
  app.get('/identity/login', {
    schema: {
      tags: ['Auth'],
      operationId: 'startSignIn',
      summary: 'Start a browser sign-in',
      description: 'Redirects to the identity provider\'s authorize URL with client_id, redirect_uri, response_type=code, scope `identify guilds`, a random state and a PKCE S256 challenge; the state, the verifier and the return path are kept in signed httpOnly cookies and used when the code comes back to `/auth/callback`, which signs the browser in (the refresh cookie) and sends it on to the return path.',
      querystring: LoginQuery,
      response: {
        302: {
          description: 'Redirect to the identity provider\'s authorize page (or first to PUBLIC_URL\'s origin when asked on another)',
          type: 'null',
          headers: {
            location: { type: 'string', description: 'The authorize URL with client_id, redirect_uri, response_type, scope, state and code_challenge', example: 'https://idp.example.com/oauth2/authorize?response_type=code&client_id=app&scope=identify%20guilds' },
            'set-cookie': { type: 'string', description: 'The signed state, PKCE verifier and return path cookies (httpOnly, SameSite=Lax, 10 minutes)', example: 'oauth_state=9b2f6d1e-4c1a-4f7e-8f53-3f0d7c2a9e61.c2ln; Max-Age=600; Path=/; HttpOnly; SameSite=Lax' }
          }
        },
        ...errors(
          fail(400, `\`return\` is longer than ${MAX_RETURN_PATH} characters, holds a NUL character or is given twice`, `querystring/return must NOT have more than ${MAX_RETURN_PATH} characters`),
          429)
      }
    }
  }, async (request, reply) => {
    // The sign-in starts on PUBLIC_URL's origin, where the provider sends the code back: cookies set on another
    // name of this server (127.0.0.1 beside localhost) would not come back with it.
    if (request.host !== publicOrigin.host || `${request.protocol}:` !== publicOrigin.protocol) {
      return reply.redirect(`${publicOrigin.origin}${request.url}`, 302)
    }
    reply.setCookie(RETURN_COOKIE, returnPath(request.query.return), signinCookieOptions(app))
    return reply.redirect(await app.identityOAuth2.generateAuthorizationUri(request, reply), 302)
  })
}

export default login
