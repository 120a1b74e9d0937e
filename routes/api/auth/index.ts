import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { answer, errors, fail, rateLimitHeaders, ref, retryAfter, type Headers } from '../../../schemas/common.ts'
import { IdentityQuery, Me, RefreshBody, SessionParams, SessionsResponse, SignInResponse, TokenPair } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { grantsRequiredScopes, exchangeFailure, fetchIdentity, SigninRefused } from '../../../lib/auth/idp-client.ts'
import { hashTokenId } from '../../../lib/auth/tokens.ts'
import { createSession, isUuid, liveSessions, revokeSession, rotateRefreshToken, saveSignIn, sessionOwner, type UserRow, type UserWithGuilds } from '../../../db/auth.ts'
import cookiePlugin from '../../../plugins/external/cookie.ts'
import oauth2Plugin from '../../../plugins/external/oauth2.ts'
import { REFRESH_COOKIE } from '../../../lib/auth/cookies.ts'

const bearer = [{ bearerAuth: [] }]

// The headers of an answer carrying tokens: kept by no cache (RFC 6749 §5.1), and the refresh token's
// cookie, as sign-in and refresh set it (Secure in production).
const tokenHeaders: Headers = {
  'cache-control': { type: 'string', description: 'Always `no-store` (every answer under /api/auth): no cache may keep the tokens (RFC 6749 §5.1)', example: 'no-store' },
  pragma: { type: 'string', description: 'Always `no-cache`, for HTTP/1.0 caches', example: 'no-cache' },
  'set-cookie': {
    type: 'string',
    description: 'The new refresh token as the httpOnly `refresh_token` cookie: Path=/api/auth, SameSite=Strict, Max-Age the refresh lifetime, Secure in production',
    example: 'refresh_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln; Max-Age=604800; Path=/api/auth; HttpOnly; SameSite=Strict'
  }
}

function userBody (u: UserRow) {
  return { id: u.id, providerId: u.provider_id, username: u.username, discriminator: u.discriminator, avatar: u.avatar, role: u.role, createdAt: u.created_at.toISOString() }
}

const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, tokens, revocations, signinGuard } = app
  // signin_attempts_total{outcome}: success, refused (the client's fault), failed (provider or database), blocked.
  const signins = app.appMetrics.signins
  const cookieBase = { httpOnly: true, secure: config.isProduction, path: '/api/auth' } as const

  const setRefreshCookie = (reply: FastifyReply, token: string) =>
    reply.setCookie(REFRESH_COOKIE, token, { ...cookieBase, sameSite: 'strict', maxAge: Math.floor(app.tokenLifetimes.refreshMs / 1000) })

  // The code exchange through @fastify/oauth2 (decorated in the cookie scope below), its failures mapped onto the contract.
  const exchangeCode = async (request: FastifyRequest, reply: FastifyReply): Promise<string> => {
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

  // Cookies (the sign-in state, the PKCE verifier, the refresh token) live only on these routes: the
  // cookie plugin's hooks run on every request of the scope that registers it.
  const cookieRoutes: FastifyPluginAsyncTypebox = async (scoped) => {
    await scoped.register(cookiePlugin)
    // The browser sign-in starts on PUBLIC_URL's origin, where the provider sends the code back: a state
    // cookie set on another name of this server (127.0.0.1 beside localhost) would not come back with it.
    const publicOrigin = new URL(config.PUBLIC_URL)
    scoped.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.url !== '/api/auth/identity/login') return
      if (request.host === publicOrigin.host && `${request.protocol}:` === publicOrigin.protocol) return
      return reply.redirect(`${publicOrigin.origin}${request.url}`, 302)
    })
    await scoped.register(oauth2Plugin)

    scoped.get('/identity', {
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
      const wait = await signinGuard.begin(request.ip)
      if (wait) {
        signins.inc({ outcome: 'blocked' })
        request.log.warn({ ip: request.ip, blockSeconds: Math.ceil(wait / 1000) }, 'sign-in refused: too many failed attempts from this address')
        throw new HttpError(429, 'Rate limit exceeded', { 'retry-after': String(Math.ceil(wait / 1000)) })
      }
      let user: UserRow
      let refresh: ReturnType<typeof tokens.refresh>
      let sid: string
      try {
        const providerToken = await exchangeCode(request, reply)
        const identity = await fetchIdentity(app.identityProvider, providerToken)
        user = await saveSignIn(app.db, identity.user, identity.guilds)
        app.profiles.invalidate(user.id)
        refresh = tokens.refresh(user.id)
        sid = await createSession(app.db, {
          userId: user.id,
          tokenHash: refresh.tokenHash,
          expiresAt: refresh.expiresAt,
          userAgent: request.headers['user-agent']?.slice(0, 512) ?? null,
          ip: request.ip
        }, app.sessionPolicy.maxAgeMs)
      } catch (err) {
        // Only the client's own failures (a refused code, state or scope) keep counting; a provider or
        // database that failed is not held against the address.
        signins.inc({ outcome: err instanceof SigninRefused ? 'refused' : 'failed' })
        if (!(err instanceof SigninRefused)) await signinGuard.release(request.ip)
        throw err
      }
      signins.inc({ outcome: 'success' })
      await signinGuard.release(request.ip)
      setRefreshCookie(reply, refresh.token)
      return { accessToken: tokens.access(user, sid), refreshToken: refresh.token, user: userBody(user) }
    })

    scoped.post('/refresh', {
      // The body is optional (the cookie may carry the token); an absent body validates as {}.
      preValidation: async (request) => { request.body ??= {} },
      schema: {
        tags: ['Auth'],
        operationId: 'refreshTokens',
        summary: 'Rotate the refresh token',
        description: 'Takes the refresh token from the body, or else from the refresh_token cookie, and answers a new access token and a new refresh token. ' +
          'Each refresh token works once: presenting one that was already rotated revokes its whole session (it was copied). Expired, forged or revoked tokens answer 401 "Invalid refresh token".',
        body: RefreshBody,
        response: {
          200: answer(TokenPair, 'A new access token and a new refresh token', tokenHeaders),
          ...errors(
            fail(400, 'The body is not JSON, or refreshToken is empty or too long', 'body/refreshToken must NOT have fewer than 1 characters'),
            fail(401, 'The refresh token is missing, expired, forged, revoked or already used', 'Invalid refresh token'),
            429, 503)
        }
      }
    }, async (request, reply) => {
      const token = request.body?.refreshToken ?? request.cookies[REFRESH_COOKIE]
      const invalid = new HttpError(401, 'Invalid refresh token')
      const claims = token ? tokens.verifyRefresh(token) : null
      if (claims === null) throw invalid
      const next = tokens.refresh(claims.userId)
      const result = await rotateRefreshToken(app.db, hashTokenId(claims.tokenId), { tokenHash: next.tokenHash, expiresAt: next.expiresAt }, app.sessionPolicy.maxAgeMs)
      if (result.kind === 'reused') {
        await revokeSession(app.db, result.sessionId, 'refresh token reuse')
        revocations.add(result.sessionId)
        request.log.warn({ sessionId: result.sessionId }, 'refresh token reused: session revoked')
        reply.clearCookie(REFRESH_COOKIE, cookieBase)
        throw invalid
      }
      if (result.kind !== 'ok') throw invalid
      setRefreshCookie(reply, next.token)
      return { accessToken: tokens.access(result.user, result.sessionId), refreshToken: next.token }
    })

    scoped.post('/logout', {
      config: { allowRevokedSession: true },
      schema: {
        tags: ['Auth'],
        operationId: 'logout',
        summary: 'Log out',
        description: 'Revokes the session of the access token (its access tokens stop working at once) and clears the refresh cookie. Idempotent: a token whose session is already revoked also answers 204.',
        security: bearer,
        response: {
          204: Type.Null({
            description: 'Logged out; the refresh cookie is cleared',
            headers: { 'set-cookie': { type: 'string', description: 'Clears the refresh_token cookie', example: 'refresh_token=; Max-Age=0; Path=/api/auth; HttpOnly' } }
          }),
          ...errors(401, 429, 503)
        }
      }
    }, async (request, reply) => {
      const { sessionId, userId } = request.auth!
      if (await revokeSession(app.db, sessionId, 'logout', userId)) revocations.add(sessionId)
      reply.clearCookie(REFRESH_COOKIE, cookieBase)
      return reply.code(204).send(null)
    })
  }
  await app.register(cookieRoutes)

  // The body is serialized once per cached profile (by the route's own serializer) and dropped with it.
  const meBodies = new WeakMap<object, Buffer>()
  const sendMe = (reply: FastifyReply, found: UserWithGuilds): void => {
    let body = meBodies.get(found)
    if (body === undefined) {
      body = Buffer.from(reply.serialize({
        ...userBody(found.user),
        guilds: found.guilds.map((g) => ({ id: g.guild_id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions }))
      }) as string)
      meBodies.set(found, body)
    }
    reply.type('application/json; charset=utf-8').send(body)
  }

  app.get('/me', {
    schema: {
      tags: ['Auth'],
      operationId: 'getCurrentUser',
      summary: 'The signed-in user with the guild list',
      description: 'The caller\'s user record with the guild list stored at their latest sign-in.',
      security: bearer,
      response: { 200: answer(ref(Me), 'The signed-in user with the guild list'), ...errors(401, 429, 503) }
    }
  }, (request, reply) => {
    const userId = request.auth!.userId
    // A cached profile answers at once; only a miss waits for the database.
    const cached = app.profiles.peek(userId)
    if (cached) {
      sendMe(reply, cached)
      return
    }
    return app.profiles.get(userId).then((found) => {
      if (!found) throw new HttpError(401, 'Invalid token')
      sendMe(reply, found)
    })
  })

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
    const { id } = request.params
    const owner = isUuid(id) ? await sessionOwner(app.db, id) : undefined
    if (!owner || owner.user_id !== request.auth!.userId) throw new HttpError(404, 'Session not found')
    if (await revokeSession(app.db, id, 'revoked by user', request.auth!.userId)) revocations.add(id)
    return reply.code(204).send(null)
  })
}

export default authRoutes
