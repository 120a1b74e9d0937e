import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../lib/typebox.ts'
import { DEMO_USERS, type DemoUser } from '../../lib/dev-idp/demo-data.ts'

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const token = () => randomBytes(24).toString('base64url')

/**
 * A stand-in OAuth 2.0 identity provider for development: an authorize page to pick a demo user,
 * the token endpoint and the user and guilds endpoints. Mounted only when IDP_CLIENT_ID is unset
 * outside production.
 */
const devIdp: FastifyPluginAsyncTypebox = async (app) => {
  if (!app.config.devIdp) return
  const codes = new Map<string, { user: DemoUser; scope: string; redirectUri: string; expires: number }>()
  const grants = new Map<string, { user: DemoUser; expires: number }>()
  const hide = { hide: true }
  const oauthError = (error: string, description: string) => ({ error, error_description: description })

  app.get('/idp/authorize', {
    schema: {
      ...hide,
      querystring: Type.Object({
        client_id: Type.String(),
        redirect_uri: Type.String(),
        response_type: Type.String(),
        scope: Type.Optional(Type.String()),
        state: Type.Optional(Type.String())
      })
    }
  }, async (request, reply) => {
    const { client_id, redirect_uri, response_type, scope = '', state } = request.query
    // The page holds fresh codes; the token answers hold access tokens (RFC 6749 §5.1).
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    const idp = app.identityProvider
    if (client_id !== idp.clientId || redirect_uri !== idp.redirectUri || response_type !== 'code') {
      return reply.code(400).send({ error: 'Bad Request', message: 'Unknown client_id or redirect_uri, or response_type is not code' })
    }
    const now = Date.now()
    for (const [code, grant] of codes) if (grant.expires < now) codes.delete(code)
    for (const [key, grant] of grants) if (grant.expires < now) grants.delete(key)
    const links = DEMO_USERS.map((user) => {
      const code = token()
      codes.set(code, { user, scope, redirectUri: redirect_uri, expires: Date.now() + 60_000 })
      const target = new URL(redirect_uri)
      target.searchParams.set('code', code)
      if (state !== undefined) target.searchParams.set('state', state)
      return `<li><a class="user" data-user="${escapeHtml(user.username)}" href="${escapeHtml(target.toString())}">Sign in as <b>${escapeHtml(user.username)}#${user.discriminator}</b></a> <small>${escapeHtml(user.note)}</small></li>`
    }).join('\n')
    return reply.type('text/html; charset=utf-8').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Development identity provider</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}li{margin:.8rem 0}small{color:#666;margin-left:.5rem}.warn{background:#fff3cd;padding:.6rem;border-radius:4px}</style></head>
<body><h1>Development identity provider</h1>
<p class="warn">This stand-in provider exists only in development. It grants the scopes <code>${escapeHtml(scope || '(none)')}</code> to <code>${escapeHtml(client_id)}</code>.</p>
<ul>${links}</ul></body></html>`)
  })

  app.post('/idp/token', { schema: hide }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    const body = (request.body ?? {}) as Record<string, string>
    const grant = codes.get(body.code ?? '')
    codes.delete(body.code ?? '')
    const idp = app.identityProvider
    if (body.client_id !== idp.clientId || body.client_secret !== idp.clientSecret) return reply.code(401).send(oauthError('invalid_client', 'unknown client'))
    if (body.grant_type !== 'authorization_code' || !grant || grant.expires < Date.now() || grant.redirectUri !== body.redirect_uri) {
      return reply.code(400).send(oauthError('invalid_grant', 'unknown, used or expired code'))
    }
    const accessToken = token()
    grants.set(accessToken, { user: grant.user, expires: Date.now() + 600_000 })
    return { access_token: accessToken, token_type: 'Bearer', expires_in: 600, scope: grant.scope }
  })

  const bearerUser = (authorization: string | undefined) => {
    const grant = grants.get((authorization ?? '').replace(/^Bearer\s+/i, ''))
    return grant && grant.expires > Date.now() ? grant.user : null
  }
  app.get('/idp/users/@me', { schema: hide }, async (request, reply) => {
    const user = bearerUser(request.headers.authorization)
    if (!user) return reply.code(401).send(oauthError('invalid_token', 'unknown token'))
    return { id: user.id, username: user.username, discriminator: user.discriminator, avatar: user.avatar }
  })
  app.get('/idp/users/@me/guilds', { schema: hide }, async (request, reply) => {
    const user = bearerUser(request.headers.authorization)
    if (!user) return reply.code(401).send(oauthError('invalid_token', 'unknown token'))
    return user.guilds
  })

  // The token endpoint takes a form body, as OAuth 2.0 says.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })
}

export default devIdp
