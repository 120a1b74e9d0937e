import type { FastifyInstance } from 'fastify'
import cookiePlugin from '../../../../plugins/external/cookie.ts'
import oauth2Plugin from '../../../../plugins/external/oauth2.ts'

/**
 * The routes that carry cookies (the sign-in state, the PKCE verifier, the refresh token): the browser
 * sign-in, the code exchange, refresh and logout. The cookie plugin's hooks run on every request of the
 * scope that registers it, so only this folder and /auth/callback register it (a folder in parentheses adds
 * no URL prefix).
 */
export default async function signinScope (app: FastifyInstance): Promise<void> {
  await app.register(cookiePlugin)
  await app.register(oauth2Plugin)
}
