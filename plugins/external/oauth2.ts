import fp from 'fastify-plugin'
import { randomUUID } from 'node:crypto'
import oauth2, { type OAuth2Namespace } from '@fastify/oauth2'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { STATE_COOKIE } from '../../lib/auth/cookies.ts'
import { MAX_ANSWER_BYTES } from '../../lib/auth/idp-client.ts'

// Registered by the scopes that start or finish a browser sign-in: routes/api/auth/(signin)/autohooks.ts and
// routes/auth/callback.ts.
export const autoload = false

declare module 'fastify' {
  interface FastifyInstance {
    identityOAuth2: OAuth2Namespace
  }
}

const hostAndPath = (url: string) => {
  const u = new URL(url)
  return { host: u.origin, path: `${u.pathname}${u.search}` }
}

/** The sign-in cookies' attributes (state, PKCE verifier, return path): sent back on the provider's redirect. */
export function signinCookieOptions (app: FastifyInstance) {
  return { httpOnly: true, secure: app.config.isProduction, path: '/', sameSite: 'lax', signed: true, maxAge: 600 } as const
}

/**
 * The authorization-code flow with the identity provider: `identityOAuth2.generateAuthorizationUri` (the
 * start route, `GET /api/auth/identity/login`) makes the authorize URL with a random state and a PKCE S256
 * challenge, both kept in signed httpOnly cookies, and
 * `identityOAuth2.getAccessTokenFromAuthorizationCodeFlow` trades the code (with the verifier) for the
 * provider's token. When the state cookie is present the returned state must match it; a client that
 * ran the redirect itself sends no cookie, and the seed's state stays optional for it.
 */
export default fp(async function oauth2Plugin (app: FastifyInstance) {
  const idp = app.identityProvider
  const authorize = hostAndPath(idp.authorizeUrl)
  const token = hostAndPath(idp.tokenUrl)
  await app.register(oauth2, {
    name: 'identityOAuth2',
    scope: ['identify', 'guilds'],
    credentials: {
      client: { id: idp.clientId, secret: idp.clientSecret },
      auth: { authorizeHost: authorize.host, authorizePath: authorize.path, tokenHost: token.host, tokenPath: token.path },
      // The client secret goes in the form body; answers are parsed as JSON only when they say they are;
      // redirects are never followed (the secret must not travel elsewhere); the answer is read up to
      // MAX_ANSWER_BYTES, as the user and guild answers are (Wreck's documented `maxBytes`: its reader
      // stops at the first chunk past it and closes the connection; exchangeFailure makes that a 502).
      options: { authorizationMethod: 'body' },
      http: { json: true, timeout: idp.timeoutMs, redirects: 0, maxBytes: MAX_ANSWER_BYTES }
    },
    callbackUri: idp.redirectUri,
    pkce: 'S256',
    redirectStateCookieName: STATE_COOKIE,
    cookie: signinCookieOptions(app),
    generateStateFunction: (_request: FastifyRequest) => randomUUID(),
    checkStateFunction (this: FastifyInstance, request: FastifyRequest): boolean {
      const raw = request.cookies[STATE_COOKIE]
      if (raw === undefined) return true
      const cookie = request.unsignCookie(raw)
      return cookie.valid && cookie.value === (request.query as { state?: string }).state
    }
  })
}, { name: 'oauth2', dependencies: ['config', 'auth', 'cookie'] })
