/**
 * A client of the session API that keeps its tokens fresh, the way the API expects clients to:
 * it renews the access token a minute before it expires, or after a 401, through POST /api/auth/refresh,
 * and when renewal fails it discards both tokens and reports that the user must sign in again.
 *
 * Refresh tokens work once (each refresh answers a new one, and a reused one ends the session), so
 * concurrent calls share one renewal. Uses only `fetch`: it runs in browsers and in Node 20+.
 *
 *   const client = new SessionClient({ baseUrl: 'http://localhost:8080', tokens, onTokens: save })
 *   const me = await (await client.fetch('/api/auth/me')).json()
 */
export interface Tokens {
  accessToken: string
  refreshToken: string
}

export interface SessionClientOptions {
  baseUrl: string
  tokens: Tokens
  /** Renew this long before the access token's `exp` (default one minute). */
  renewAheadMs?: number
  /** Called with the new tokens after each renewal (store them), and with null when the session ended. */
  onTokens?: (tokens: Tokens | null) => void
}

/** The session is over (refresh refused, or already discarded): sign in again. */
export class SessionEnded extends Error {
  override name = 'SessionEnded'
}

/** The access token's `exp` claim, in milliseconds. */
function expiresAt (accessToken: string): number {
  const payload = accessToken.split('.')[1] ?? ''
  const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'))
  return (JSON.parse(json) as { exp: number }).exp * 1000
}

export class SessionClient {
  readonly #baseUrl: string
  readonly #renewAheadMs: number
  readonly #onTokens: (tokens: Tokens | null) => void
  #tokens: Tokens | null
  #renewal: Promise<Tokens> | null = null

  constructor (options: SessionClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/$/, '')
    this.#tokens = options.tokens
    this.#renewAheadMs = options.renewAheadMs ?? 60_000
    this.#onTokens = options.onTokens ?? (() => {})
  }

  get tokens (): Tokens | null {
    return this.#tokens
  }

  /**
   * `fetch` with the bearer token. A 401 is answered by one renewal and one retry, so the request body
   * must be one that can be sent twice (a string, not a stream). Throws SessionEnded when renewal fails.
   */
  async fetch (path: string, init: RequestInit = {}): Promise<Response> {
    let tokens = await this.#fresh()
    const response = await this.#send(path, init, tokens)
    if (response.status !== 401) return response
    tokens = await this.#renew(tokens)
    return this.#send(path, init, tokens)
  }

  /** Ends the session on the server and forgets the tokens. */
  async logout (): Promise<void> {
    const tokens = this.#tokens
    this.#discard()
    if (tokens) await fetch(`${this.#baseUrl}/api/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${tokens.accessToken}` } })
  }

  #send (path: string, init: RequestInit, tokens: Tokens): Promise<Response> {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${tokens.accessToken}`)
    return fetch(`${this.#baseUrl}${path}`, { ...init, headers })
  }

  // The current tokens, renewed first when the access token expires within renewAheadMs.
  async #fresh (): Promise<Tokens> {
    const tokens = this.#tokens
    if (!tokens) throw new SessionEnded('signed out: sign in again')
    return expiresAt(tokens.accessToken) - Date.now() <= this.#renewAheadMs ? this.#renew(tokens) : tokens
  }

  // One renewal at a time; a caller holding tokens that were already replaced just takes the new ones.
  #renew (stale: Tokens): Promise<Tokens> {
    if (this.#renewal) return this.#renewal
    if (this.#tokens && this.#tokens !== stale) return Promise.resolve(this.#tokens)
    this.#renewal = (async () => {
      const response = await fetch(`${this.#baseUrl}/api/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: stale.refreshToken })
      })
      if (!response.ok) {
        this.#discard()
        throw new SessionEnded(`the session ended (refresh answered ${response.status}): sign in again`)
      }
      const tokens = await response.json() as Tokens
      this.#tokens = tokens
      this.#onTokens(tokens)
      return tokens
    })().finally(() => { this.#renewal = null })
    return this.#renewal
  }

  #discard (): void {
    this.#tokens = null
    this.#onTokens(null)
  }
}
