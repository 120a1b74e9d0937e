import type { FastifyInstance } from 'fastify'
import cookiePlugin from '../../../../plugins/external/cookie.ts'
import oauth2Plugin from '../../../../plugins/external/oauth2.ts'

const LOGIN_PATH = '/api/auth/identity/login'

/**
 * The routes that carry cookies (the sign-in state, the PKCE verifier, the refresh token): the browser
 * sign-in, the code exchange, refresh and logout. The cookie plugin's hooks run on every request of the
 * scope that registers it, so only this folder registers it (a folder in parentheses adds no URL prefix).
 */
export default async function signinScope (app: FastifyInstance): Promise<void> {
  await app.register(cookiePlugin)
  // The browser sign-in starts on PUBLIC_URL's origin, where the provider sends the code back: a state
  // cookie set on another name of this server (127.0.0.1 beside localhost) would not come back with it.
  const publicOrigin = new URL(app.config.PUBLIC_URL)
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url !== LOGIN_PATH) return
    if (request.host === publicOrigin.host && `${request.protocol}:` === publicOrigin.protocol) return
    return reply.redirect(`${publicOrigin.origin}${request.url}`, 302)
  })
  // Hooks files take no URL prefix: the start route is named in full.
  await app.register(oauth2Plugin, { loginPath: LOGIN_PATH })
}
