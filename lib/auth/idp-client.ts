import { Type, Value } from '../typebox.ts'
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
export function identityProviderSettings (config: Config, devClientSecret: string | null): IdpSettings {
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
 * failed sign-in; anything else (unreachable, a timeout, a 5xx, a body that is not JSON, an answer past
 * MAX_ANSWER_BYTES) is a 502.
 */
export function exchangeFailure (err: unknown): HttpError {
  const status = err as { output?: { statusCode?: unknown }; data?: { isResponseError?: unknown } }
  const code = typeof status.output?.statusCode === 'number' ? status.output.statusCode : 0
  // Wreck marks the provider's own error answers; its other errors (connection, timeout, parse, a reader
  // stopped at `maxBytes`, which Wreck reports as a 413 or, as the connection is closed under it, as a
  // payload stream closed prematurely) are ours.
  const fromProvider = status.data?.isResponseError === true
  if (fromProvider && code >= 400 && code < 500) return new SigninRefused(401, 'Invalid authorization code')
  return unavailable()
}

/** Whether the granted scope holds identify and guilds. */
export function grantsRequiredScopes (scope: unknown): boolean {
  const scopes = typeof scope === 'string' ? scope.split(/[\s,]+/) : Array.isArray(scope) ? scope.map(String) : []
  return REQUIRED_SCOPES.every((s) => scopes.includes(s))
}

// The largest answer read from the provider: the token answer (plugins/external/oauth2.ts), the user and
// the guild list. Reading stops at the first byte past it.
export const MAX_ANSWER_BYTES = 1024 * 1024

const NoNul = { pattern: '^[^\\u0000]*$' }
const Id = Type.String({ minLength: 1, maxLength: 64, ...NoNul })
const Text = (maxLength: number) => Type.String({ maxLength, ...NoNul })
const OptionalImage = Type.Optional(Type.Union([Type.Null(), Text(256)]))

/** What is accepted from the provider's user endpoint; other fields are ignored. */
const UserAnswer = Type.Object({
  id: Id,
  username: Type.String({ minLength: 1, maxLength: 100, ...NoNul }),
  discriminator: Type.Optional(Text(16)),
  avatar: OptionalImage
})

/** The guild list: at most 1000 entries, each with a decimal permission bit set of at most 64 bits. */
const GuildsAnswer = Type.Array(Type.Object({
  id: Id,
  name: Type.Optional(Text(200)),
  icon: OptionalImage,
  owner: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.String({ pattern: '^\\d{1,20}$' }))
}), { maxItems: 1000 })

const unusable = () => new HttpError(502, 'Identity provider returned an unusable answer')

async function call (url: string, accessToken: string, timeoutMs: number): Promise<unknown> {
  let res: Response
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(timeoutMs) })
  } catch {
    throw unavailable()
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {})
    throw unavailable()
  }
  const text = await readBounded(res, MAX_ANSWER_BYTES)
  try {
    return JSON.parse(text)
  } catch {
    throw unusable()
  }
}

// The answer as text, refused past maxBytes without reading the rest.
async function readBounded (res: Response, maxBytes: number): Promise<string> {
  if (Number(res.headers.get('content-length') ?? 0) > maxBytes) {
    await res.body?.cancel().catch(() => {})
    throw unusable()
  }
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength
      if (size > maxBytes) {
        await res.body?.cancel().catch(() => {})
        throw unusable()
      }
      chunks.push(chunk)
    }
  } catch (err) {
    throw err instanceof HttpError ? err : unavailable()
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The signed-in person and their guilds, read with the provider's access token from the code exchange.
 * Answers are validated before anything is stored: wrong types, over-long or NUL-bearing strings, more
 * than 1000 guilds or a malformed permission set make the sign-in a 502, never a 500 or a stored oddity.
 */
export async function fetchIdentity (settings: IdpSettings, accessToken: string): Promise<{ user: IdpUser; guilds: IdpGuild[] }> {
  const [rawUser, rawGuilds] = await Promise.all([
    call(settings.userUrl, accessToken, settings.timeoutMs),
    call(settings.guildsUrl, accessToken, settings.timeoutMs)
  ])
  if (!Value.Check(UserAnswer, rawUser) || !Value.Check(GuildsAnswer, rawGuilds)) throw unusable()
  return {
    user: { id: rawUser.id, username: rawUser.username, discriminator: rawUser.discriminator ?? '0', avatar: rawUser.avatar ?? null },
    guilds: rawGuilds.map((g) => ({
      id: g.id,
      name: g.name ?? '',
      icon: g.icon ?? null,
      owner: g.owner === true,
      permissions: g.permissions ?? '0'
    }))
  }
}
