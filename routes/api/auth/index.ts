import { randomUUID } from 'node:crypto'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors } from '../../../schemas/common.ts'
import { IdentityQuery, Me, RefreshBody, SessionParams, SessionsResponse, SignInResponse, TokenPair } from '../../../schemas/auth.ts'
import { HttpError } from '../../../lib/errors.ts'
import { signInWithCode, SigninRefused } from '../../../lib/auth/idp-client.ts'
import { hashTokenId } from '../../../lib/auth/tokens.ts'
import { createSession, isUuid, liveSessions, revokeSession, rotateRefreshToken, saveSignIn, sessionOwner, type UserRow, type UserWithGuilds } from '../../../db/auth.ts'
import cookie from '@fastify/cookie'
import { REFRESH_COOKIE, STATE_COOKIE, bearerClaims, cookieSecret } from '../../../plugins/auth.ts'
import type { RateLimitSetting } from '../../../plugins/rate-limit.ts'
import type { FrontWriter } from '../../../plugins/front-door.ts'

const bearer = [{ bearerAuth: [] }]

function userBody(u: UserRow) {
  return { id: u.id, providerId: u.provider_id, username: u.username, discriminator: u.discriminator, avatar: u.avatar, role: u.role, createdAt: u.created_at.toISOString() }
}

const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The body is serialized once per cached profile (by the route's own serializer) and dropped with it,
  // kept with the route's rate limit, which an answer at the front door counts against.
  const meAnswers = new WeakMap<object, { body: Buffer; rateLimit: RateLimitSetting }>()
  const sendMe = (request: FastifyRequest, reply: FastifyReply, found: UserWithGuilds): void => {
    let answer = meAnswers.get(found)
    if (answer === undefined) {
      const body = Buffer.from(reply.serialize({
        ...userBody(found.user),
        guilds: found.guilds.map((g) => ({ id: g.guild_id, name: g.name, icon: g.icon, owner: g.owner, permissions: g.permissions }))
      }) as string)
      answer = { body, rateLimit: request.routeOptions.config.rateLimit ?? false }
      meAnswers.set(found, answer)
    }
    reply.type('application/json; charset=utf-8').send(answer.body)
  }

  /**
   * GET /api/auth/me at the front door: a valid bearer token (the same check as the route's hook) whose
   * user's profile is cached and already serialized is answered before the router, with the headers and
   * bytes the route would send; anything else (no or a bad token, a revoked session, a profile to load, a
   * query string, another method) goes on to Fastify, which answers it as always.
   */
  const writeMe: FrontWriter<Buffer> = (_req, res, headers, body) => {
    headers['content-type'] = 'application/json; charset=utf-8'
    headers['content-length'] = body.length
    res.writeHead(200, headers).end(body)
  }
  const cachedMe = (authorization: string | undefined) => {
    const auth = app.bearerAuth(authorization)
    if (typeof auth === 'string') return undefined
    const profile = app.profiles.peek(auth.userId)
    return profile === undefined ? undefined : meAnswers.get(profile)
  }
  app.frontDoor.at(`${app.prefix}/me`, (req, res, next) => {
    const answer = req.method === 'GET' ? cachedMe(req.headers.authorization) : undefined
    if (answer === undefined) next(req, res)
    else app.answerAtFrontDoor(req, res, next, answer.rateLimit, writeMe, answer.body)
  })

  const { config, tokens, revocations, signinGuard } = app
  const cookieBase = { httpOnly: true, secure: config.isProduction, path: '/api/auth' } as const

  const setRefreshCookie = (reply: FastifyReply, token: string) =>
    reply.setCookie(REFRESH_COOKIE, token, { ...cookieBase, sameSite: 'strict', maxAge: Math.floor(tokens.refreshTtlMs / 1000) })

  const issueAccess = (user: UserRow, sid: string) => tokens.signAccess({
    userId: user.id, providerId: user.provider_id, username: `${user.username}#${user.discriminator}`, role: user.role, sid
  })

  const refused = async (request: FastifyRequest, err: HttpError): Promise<never> => {
    const blockMs = await signinGuard.recordFailure(request.ip)
    if (blockMs) request.log.warn({ ip: request.ip, blockSeconds: Math.ceil(blockMs / 1000) }, 'sign-in blocked after repeated failures')
    throw err
  }

  // Cookies (the sign-in state, the refresh token) live only on these four routes: @fastify/cookie parses
  // and writes them in hooks that run on every request of the scope that registers it, and the bearer
  // routes below, /api/auth/me first, have no use for them.
  const cookieRoutes: FastifyPluginAsyncTypebox = async (scoped) => {
    await scoped.register(cookie, { secret: cookieSecret(tokens) })

    scoped.get('/identity/login', {
      schema: {
        tags: ['Auth'],
        summary: 'Start a browser sign-in',
        description: 'Redirects to the identity provider\'s authorize URL with client_id, redirect_uri, response_type=code, scope `identify guilds` and a random state, kept in a signed httpOnly cookie and checked when the code comes back.',
        response: { 302: Type.Null({ description: 'Redirect to the identity provider' }), ...errors(429) }
      }
    }, async (_request, reply) => {
      const idp = app.idpSettings()
      const state = randomUUID()
      reply.setCookie(STATE_COOKIE, state, { httpOnly: true, secure: config.isProduction, sameSite: 'lax', path: '/', signed: true, maxAge: 600 })
      const url = new URL(idp.authorizeUrl)
      url.search = new URLSearchParams({ client_id: idp.clientId, redirect_uri: idp.redirectUri, response_type: 'code', scope: 'identify guilds', state }).toString()
      return reply.redirect(url.toString(), 302)
    })

    scoped.get('/identity', {
      schema: {
        tags: ['Auth'],
        summary: 'Sign in with an authorization code',
        description: 'Exchanges the code with the identity provider, stores the user and the user\'s guild list, opens a session and answers the tokens. ' +
          'The refresh token is also set as an httpOnly SameSite=Strict cookie scoped to /api/auth. ' +
          `A refused code is 401, a provider that fails or cannot be reached is 502, a grant without the identify and guilds scopes is 403. After ${config.SIGNIN_MAX_FAILURES} failed sign-ins within 15 minutes the client IP is blocked (429 with retry-after), the block doubling with each further failure.`,
        querystring: IdentityQuery,
        response: { 200: SignInResponse, ...errors(400, 401, 403, 429, 502, 503) }
      }
    }, async (request, reply) => {
      const wait = await signinGuard.blockedFor(request.ip)
      if (wait) throw new HttpError(429, 'Rate limit exceeded', { 'retry-after': String(Math.ceil(wait / 1000)) })
      const { code, state } = request.query
      if (state !== undefined) {
        const raw = request.cookies[STATE_COOKIE]
        const cookie = raw ? request.unsignCookie(raw) : null
        if (!cookie?.valid || cookie.value !== state) await refused(request, new HttpError(401, 'Invalid state'))
      }
      let identity
      try {
        identity = await signInWithCode(app.idpSettings(), code)
      } catch (err) {
        if (err instanceof SigninRefused) await refused(request, err)
        throw err
      }
      const user = await saveSignIn(app.db, identity.user, identity.guilds)
      await app.profiles.changed(user.id)
      const refresh = tokens.signRefresh(user.id)
      const sid = await createSession(app.db, {
        userId: user.id, tokenHash: hashTokenId(refresh.tokenId), expiresAt: refresh.expiresAt,
        userAgent: request.headers['user-agent']?.slice(0, 512) ?? null, ip: request.ip
      })
      await signinGuard.recordSuccess(request.ip)
      setRefreshCookie(reply, refresh.token)
      if (state !== undefined) reply.clearCookie(STATE_COOKIE, { path: '/' })
      return { accessToken: issueAccess(user, sid), refreshToken: refresh.token, user: userBody(user) }
    })

    scoped.post('/refresh', {
      // The body is optional (the cookie may carry the token); an absent body validates as {}.
      preValidation: async (request) => { request.body ??= {} },
      schema: {
        tags: ['Auth'],
        summary: 'Rotate the refresh token',
        description: 'Takes the refresh token from the body, or else from the refresh_token cookie, and answers a new access token and a new refresh token. ' +
          'Each refresh token works once: presenting one that was already rotated revokes its whole session (it was copied). Expired, forged or revoked tokens answer 401 "Invalid refresh token".',
        body: RefreshBody,
        response: { 200: TokenPair, ...errors(400, 401, 429, 503) }
      }
    }, async (request, reply) => {
      const token = request.body?.refreshToken ?? request.cookies[REFRESH_COOKIE]
      const invalid = new HttpError(401, 'Invalid refresh token')
      if (!token) throw invalid
      const claims = tokens.verifyRefresh(token)
      if (typeof claims === 'string') throw invalid
      const next = tokens.signRefresh(claims.userId)
      const result = await rotateRefreshToken(app.db, hashTokenId(claims.tokenId), { tokenHash: hashTokenId(next.tokenId), expiresAt: next.expiresAt })
      if (result.kind === 'reused') {
        await revokeSession(app.db, result.sessionId, 'refresh token reuse')
        await revocations.announce(result.sessionId)
        request.log.warn({ sessionId: result.sessionId }, 'refresh token reused: session revoked')
        reply.clearCookie(REFRESH_COOKIE, cookieBase)
        throw invalid
      }
      if (result.kind !== 'ok') throw invalid
      setRefreshCookie(reply, next.token)
      return { accessToken: issueAccess(result.user, result.sessionId), refreshToken: next.token }
    })

    scoped.post('/logout', {
      schema: {
        tags: ['Auth'],
        summary: 'Log out',
        description: 'Revokes the session of the access token (its access tokens stop working at once) and clears the refresh cookie. Idempotent: a token whose session is already revoked also answers 204.',
        security: bearer,
        response: { 204: Type.Null(), ...errors(401, 429, 503) }
      }
    }, async (request, reply) => {
      const claims = bearerClaims(tokens, request.headers.authorization)
      if (await revokeSession(app.db, claims.sid, 'logout', claims.userId)) await revocations.announce(claims.sid)
      reply.clearCookie(REFRESH_COOKIE, cookieBase)
      return reply.code(204).send(null)
    })
  }
  await app.register(cookieRoutes)

  app.get('/me', {
    onRequest: app.authenticate,
    schema: {
      tags: ['Auth'],
      summary: 'The signed-in user with the guild list',
      security: bearer,
      response: { 200: Me, ...errors(401, 429, 503) }
    }
  }, (request, reply) => {
    const userId = request.auth!.userId
    // A cached profile answers at once; only a miss waits for the database.
    const cached = app.profiles.peek(userId)
    if (cached) {
      sendMe(request, reply, cached)
      return
    }
    return app.profiles.get(userId).then((found) => {
      if (!found) throw new HttpError(401, 'Invalid token')
      sendMe(request, reply, found)
    })
  })

  app.get('/sessions', {
    onRequest: app.authenticate,
    schema: {
      tags: ['Auth'],
      summary: 'The caller\'s live sessions',
      description: 'Sessions that are neither revoked nor expired, newest first; `current` marks the one making this request.',
      security: bearer,
      response: { 200: SessionsResponse, ...errors(401, 429, 503) }
    }
  }, async (request) => {
    const rows = await liveSessions(app.db, request.auth!.userId)
    return {
      sessions: rows.map((s) => ({
        id: s.id, createdAt: s.created_at.toISOString(), lastUsedAt: s.last_used_at.toISOString(), expiresAt: s.expires_at.toISOString(),
        userAgent: s.user_agent, ip: s.ip, current: s.id === request.auth!.sessionId
      }))
    }
  })

  app.delete('/sessions/:id', {
    onRequest: app.authenticate,
    schema: {
      tags: ['Auth'],
      summary: 'Revoke one of the caller\'s sessions',
      description: 'Its access tokens stop working at once and its refresh token is refused. A session that is not the caller\'s, or does not exist, answers 404.',
      security: bearer,
      params: SessionParams,
      response: { 204: Type.Null(), ...errors(401, 404, 429, 503) }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const owner = isUuid(id) ? await sessionOwner(app.db, id) : undefined
    if (!owner || owner.user_id !== request.auth!.userId) throw new HttpError(404, 'Session not found')
    if (await revokeSession(app.db, id, 'revoked by user', request.auth!.userId)) await revocations.announce(id)
    return reply.code(204).send(null)
  })
}

export default authRoutes
