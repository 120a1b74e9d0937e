import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { answer, errors, fail, rateLimitHeaders, retryAfter } from '../../../../schemas/common.ts'
import { IdentityQuery, SignInResponse } from '../../../../schemas/auth.ts'
import { HttpError } from '../../../../lib/errors.ts'
import { grantsRequiredScopes, exchangeFailure, fetchIdentity, SigninRefused } from '../../../../lib/auth/idp-client.ts'
import { tokenHeaders, setRefreshCookie, userBody } from '../shared.ts'

// The code exchange through @fastify/oauth2 (decorated in this folder's scope), its failures mapped onto the contract.
async function exchangeCode (request: FastifyRequest, reply: FastifyReply): Promise<string> {
  let grant
  try {
    grant = (await request.server.identityOAuth2.getAccessTokenFromAuthorizationCodeFlow(request, reply)).token
  } catch (err) {
    if (err instanceof Error && err.message === 'Invalid state') throw new SigninRefused(401, 'Invalid state')
    const failure = exchangeFailure(err)
    if (failure instanceof SigninRefused) throw failure
    request.log.warn({ err: (err as Error).message }, 'identity provider code exchange failed')
    throw failure
  }
  if (typeof grant.access_token !== 'string' || grant.access_token === '') throw new HttpError(502, 'Identity provider unavailable')
  if (!grantsRequiredScopes((grant as { scope?: unknown }).scope)) {
    throw new SigninRefused(403, 'The identity provider did not grant the identify and guilds scopes')
  }
  return grant.access_token
}

const identity: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  app.get('/identity', {
    // A HEAD would run the exchange and sign someone in (spending the code) with nothing to show for it.
    exposeHeadRoute: false,
    schema: {
      tags: ['Auth'],
      operationId: 'signIn',
      summary: 'Sign in with an authorization code',
      description: 'Exchanges the code with the identity provider, stores the user and the user\'s guild list, opens a session and answers the tokens. ' +
        'The refresh token is also set as an httpOnly SameSite=Strict cookie scoped to /api/auth. ' +
        'When the sign-in was started here (its state cookie is present) the returned `state` must match it, or the sign-in fails with 401 "Invalid state". ' +
        `A refused code is 401, a provider that fails or cannot be reached is 502, a grant without the identify and guilds scopes is 403. After ${config.SIGNIN_MAX_FAILURES} failed sign-ins within 15 minutes the client IP (an IPv6 client's /64) is blocked (429 with retry-after) for ${config.SIGNIN_BLOCK_SECONDS} s; each later block of the same IP within a day doubles, up to ${config.SIGNIN_MAX_BLOCK_SECONDS} s. Attempts are counted before the provider is called, so a burst of concurrent attempts gets one first block; a success takes back only its own attempt.`,
      querystring: IdentityQuery,
      response: {
        200: answer(SignInResponse, 'Signed in: the tokens and the user', tokenHeaders),
        ...errors(
          fail(400, 'The code is missing or too long, or the state is too long', 'querystring must have required property \'code\''),
          fail(401, 'The provider refused the code, or the state does not match the sign-in started here', 'Invalid authorization code', 'Invalid state'),
          fail(403, 'The provider did not grant the identify and guilds scopes', 'The identity provider did not grant the identify and guilds scopes'),
          {
            ...fail(429, 'Too many requests from this client IP (AUTH_RATE_LIMIT_MAX), or the IP is blocked after repeated failed sign-ins (then only `retry-after` is sent)', 'Rate limit exceeded'),
            headers: { ...rateLimitHeaders, ...retryAfter }
          },
          fail(502, 'The identity provider failed, timed out or answered something unusable', 'Identity provider unavailable', 'Identity provider returned an unusable answer'),
          503)
      }
    }
  }, async (request, reply) => {
    const signedIn = await app.signin.signIn({ ip: request.ip, userAgent: request.headers['user-agent'], log: request.log }, async () =>
      fetchIdentity(app.identityProvider, await exchangeCode(request, reply)))
    setRefreshCookie(app, reply, signedIn.refreshToken)
    return { accessToken: signedIn.accessToken, refreshToken: signedIn.refreshToken, user: userBody(signedIn.user) }
  })
}

export default identity
