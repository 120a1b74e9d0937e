import { HttpError } from '../errors.ts'
import type { Config } from '../config.ts'

/** Where the identity provider is and who we are to it. */
export interface IdpSettings {
  clientId: string
  clientSecret: string
  redirectUri: string
  authorizeUrl: string
  tokenUrl: string
  userUrl: string
  guildsUrl: string
  timeoutMs: number
}

export interface IdpUser { id: string; username: string; discriminator: string; avatar: string | null }
export interface IdpGuild { id: string; name: string; icon: string | null; owner: boolean; permissions: string }

/**
 * The provider's settings: the IDP_* ones, or for the development provider its routes under /dev/idp
 * on PUBLIC_URL, the one address known before the server listens (the token exchange calls it too).
 */
export function identityProviderSettings(config: Config, devClientSecret: string | null): IdpSettings {
  const dev = `${config.PUBLIC_URL}/dev/idp`
  const devUrl = (path: string) => (config.devIdp ? `${dev}${path}` : '')
  return {
    clientId: config.devIdp ? 'dev-client' : config.IDP_CLIENT_ID!,
    clientSecret: config.devIdp ? devClientSecret! : config.IDP_CLIENT_SECRET ?? '',
    redirectUri: config.IDP_REDIRECT_URI ?? `${config.PUBLIC_URL}/auth/callback`,
    authorizeUrl: config.IDP_AUTHORIZE_URL ?? devUrl('/authorize'),
    tokenUrl: config.IDP_TOKEN_URL ?? devUrl('/token'),
    userUrl: config.IDP_USER_URL ?? devUrl('/users/@me'),
    guildsUrl: config.IDP_GUILDS_URL ?? devUrl('/users/@me/guilds'),
    timeoutMs: config.IDP_TIMEOUT_MS
  }
}

const REQUIRED_SCOPES = ['identify', 'guilds']

// Sign-in failures the caller made (a bad code, a bad state or a refused scope) count toward the per-IP block.
export class SigninRefused extends HttpError {}

const unavailable = () => new HttpError(502, 'Identity provider unavailable')

/**
 * The code exchange's failure as our answer: the provider refusing the code (a 4xx) is the caller's
 * failed sign-in; anything else (unreachable, a timeout, a 5xx, a body that is not JSON) is a 502.
 */
export function exchangeFailure(err: unknown): HttpError {
  const status = (err as { output?: { statusCode?: unknown }; data?: { isResponseError?: unknown } })
  const code = typeof status.output?.statusCode === 'number' ? status.output.statusCode : 0
  // Wreck marks the provider's own error answers; its other errors (connection, timeout, parse) are ours.
  const fromProvider = status.data?.isResponseError === true
  if (fromProvider && code >= 400 && code < 500) return new SigninRefused(401, 'Invalid authorization code')
  return unavailable()
}

/** Whether the granted scope holds identify and guilds. */
export function grantsRequiredScopes(scope: unknown): boolean {
  const scopes = typeof scope === 'string' ? scope.split(/[\s,]+/) : Array.isArray(scope) ? scope.map(String) : []
  return REQUIRED_SCOPES.every((s) => scopes.includes(s))
}

async function call(url: string, accessToken: string, timeoutMs: number): Promise<unknown> {
  let res: Response
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) })
  } catch {
    throw unavailable()
  }
  if (!res.ok) throw unavailable()
  try {
    return await res.json()
  } catch {
    throw unavailable()
  }
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0

/** The signed-in person and their guilds, read with the provider's access token from the code exchange. */
export async function fetchIdentity(settings: IdpSettings, accessToken: string): Promise<{ user: IdpUser; guilds: IdpGuild[] }> {
  const [rawUser, rawGuilds] = await Promise.all([
    call(settings.userUrl, accessToken, settings.timeoutMs),
    call(settings.guildsUrl, accessToken, settings.timeoutMs)
  ])
  const user = (rawUser ?? {}) as Partial<IdpUser>
  const guilds = rawGuilds as Partial<IdpGuild>[]
  if (!isString(user.id) || !isString(user.username) || !Array.isArray(guilds)) throw unavailable()
  return {
    user: { id: user.id, username: user.username, discriminator: String(user.discriminator ?? '0'), avatar: typeof user.avatar === 'string' ? user.avatar : null },
    guilds: guilds.filter((g) => g !== null && typeof g === 'object' && isString(g.id)).map((g) => ({
      id: g.id as string,
      name: String(g.name ?? ''),
      icon: typeof g.icon === 'string' ? g.icon : null,
      owner: g.owner === true,
      permissions: /^\d+$/.test(String(g.permissions ?? '')) ? String(g.permissions) : '0'
    }))
  }
}
