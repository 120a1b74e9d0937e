import { HttpError } from '../errors.ts'

export interface IdpSettings {
  clientId: string
  clientSecret: string
  redirectUri: string
  tokenUrl: string
  userUrl: string
  guildsUrl: string
  timeoutMs: number
}

export interface IdpUser { id: string; username: string; discriminator: string; avatar: string | null }
export interface IdpGuild { id: string; name: string; icon: string | null; owner: boolean; permissions: string }

const REQUIRED_SCOPES = ['identify', 'guilds']

// Sign-in failures the caller made (a bad code or a refused scope) count toward the per-IP block.
export class SigninRefused extends HttpError {}

const unavailable = () => new HttpError(502, 'Identity provider unavailable')

async function call(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
  } catch {
    throw unavailable()
  }
}

async function json(res: Response): Promise<unknown> {
  try {
    return await res.json()
  } catch {
    throw unavailable()
  }
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0

/** The authorization-code exchange and the two identity look-ups, with the provider's failures mapped to HTTP answers. */
export async function signInWithCode(settings: IdpSettings, code: string): Promise<{ user: IdpUser; guilds: IdpGuild[] }> {
  const tokenRes = await call(settings.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: settings.redirectUri,
      client_id: settings.clientId, client_secret: settings.clientSecret
    })
  }, settings.timeoutMs)
  if (tokenRes.status >= 500) throw unavailable()
  if (!tokenRes.ok) throw new SigninRefused(401, 'Invalid authorization code')
  const grant = (await json(tokenRes)) as { access_token?: unknown; scope?: unknown }
  if (!isString(grant.access_token)) throw unavailable()
  const scopes = typeof grant.scope === 'string' ? grant.scope.split(/[\s,]+/) : []
  if (!REQUIRED_SCOPES.every((s) => scopes.includes(s))) {
    throw new SigninRefused(403, 'The identity provider did not grant the identify and guilds scopes')
  }
  const headers = { authorization: `Bearer ${grant.access_token}`, accept: 'application/json' }
  const [userRes, guildsRes] = await Promise.all([
    call(settings.userUrl, { headers }, settings.timeoutMs),
    call(settings.guildsUrl, { headers }, settings.timeoutMs)
  ])
  if (!userRes.ok || !guildsRes.ok) throw unavailable()
  const user = (await json(userRes)) as Partial<IdpUser>
  const guilds = (await json(guildsRes)) as Partial<IdpGuild>[]
  if (!isString(user.id) || !isString(user.username) || !Array.isArray(guilds)) throw unavailable()
  return {
    user: { id: user.id, username: user.username, discriminator: String(user.discriminator ?? '0'), avatar: typeof user.avatar === 'string' ? user.avatar : null },
    guilds: guilds.filter((g) => isString(g.id)).map((g) => ({
      id: g.id as string,
      name: String(g.name ?? ''),
      icon: typeof g.icon === 'string' ? g.icon : null,
      owner: g.owner === true,
      permissions: /^\d+$/.test(String(g.permissions ?? '')) ? String(g.permissions) : '0'
    }))
  }
}
