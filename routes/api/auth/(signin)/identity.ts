import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors, fail, rateLimitHeaders, retryAfter } from '../../../../schemas/common.ts'
import { IdentityQuery, SignInResponse } from '../../../../schemas/auth.ts'
import { signInWithCode, tokenHeaders, userBody } from '../shared.ts'

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
    const signedIn = await signInWithCode(request, reply)
    return { accessToken: signedIn.accessToken, refreshToken: signedIn.refreshToken, user: userBody(signedIn.user) }
  })
}

export default identity
