/*
 * The session of a page: one module every page under public/ shares. The access token lives in this
 * module's memory only (never in localStorage, sessionStorage or a readable cookie); the httpOnly refresh
 * cookie that /auth/callback set renews it through POST /api/auth/refresh. Of the open tabs of this
 * origin, one (the holder of a Web Lock) renews, a minute before expiry, and hands the new token to the
 * others over a BroadcastChannel, so the tabs renew once between them and always share one token. The
 * server sets a readable marker cookie (`has_session=1`, no secret) beside the refresh cookie and clears it
 * with it: without the marker there is no session to renew, so a signed-out visit shows the sign-in
 * without asking the server.
 *
 *   const session = new Session({ onSignedOut: showSignIn, onToken: showSignedIn })
 *   session.start().catch(showError)
 *   const guilds = await (await session.fetch('/api/guilds')).json()
 */

const REFRESH_URL = '/api/auth/refresh'
const SESSION_MARKER = 'has_session'
const LOGIN_URL = '/api/auth/identity/login'
const LEADER_LOCK = 'session-renewal'
const CHANNEL = 'session'
// Renew this long before expiry at most (half the lifetime of a token that lives less than twice as long).
const MAX_MARGIN_MS = 60_000
// How long a tab waits for the renewing tab's answer before renewing by itself (a tab being closed).
const ANSWER_WAIT_MS = 5_000
// After a renewal that failed without ending the session (offline, 429, 5xx): the next try.
const RETRY_MS = 5_000

/** An answer that is not 2xx: its status, and the `{error, message}` of its body. */
export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status (0: the server could not be reached)
   * @param {string} error the reason phrase
   * @param {string} message what went wrong, in words
   */
  constructor (status, error, message) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.error = error
  }
}

/**
 * The ApiError of an answer that is not ok, from its `{error, message}` body when it has one.
 * @param {Response} response
 * @returns {Promise<ApiError>}
 */
export async function apiError (response) {
  /** @type {{ error?: unknown, message?: unknown } | null} */
  let body = null
  try {
    body = await response.json()
  } catch {}
  const error = typeof body?.error === 'string' ? body.error : (response.statusText || `HTTP ${response.status}`)
  const message = typeof body?.message === 'string' ? body.message : `The server answered ${response.status}`
  return new ApiError(response.status, error, message)
}

/**
 * Where a sign-in starts that comes back to `path` (by default the current page, with its query).
 * @param {string} [path]
 */
export function signInUrl (path = location.pathname + location.search) {
  return `${LOGIN_URL}?return=${encodeURIComponent(path)}`
}

/**
 * Whether this browser holds a refresh cookie, as its marker cookie says (the refresh cookie itself is
 * httpOnly). A marker that outlived its session costs one refused renewal, whose answer clears it.
 */
export function hasSessionCookie () {
  return typeof document !== 'undefined' && document.cookie.split(';').some((pair) => pair.trim().startsWith(`${SESSION_MARKER}=`))
}

/**
 * How long before an access token of this lifetime expires it is renewed: a minute, or half the
 * lifetime when that is shorter.
 * @param {number} lifetimeMs
 */
export function renewalMargin (lifetimeMs) {
  return Math.min(MAX_MARGIN_MS, lifetimeMs / 2)
}

/**
 * The claims of an access token (its middle part), as the server signed them.
 * @param {string} accessToken
 * @returns {{ exp: number, iat: number, username?: string, [claim: string]: unknown }}
 */
export function tokenClaims (accessToken) {
  const payload = accessToken.split('.')[1] ?? ''
  return JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')))
}

/**
 * An access token's lifetime (`exp - iat`), in milliseconds. Measured from when the token arrived,
 * it does not depend on this machine's clock agreeing with the server's.
 * @param {string} accessToken
 */
function lifetimeOf (accessToken) {
  const { exp, iat } = tokenClaims(accessToken)
  return (exp - iat) * 1000
}

/**
 * @typedef {object} SessionOptions
 * @property {() => void} onSignedOut called when the session ends or there is none (show the sign-in)
 * @property {(accessToken: string) => void} [onToken] called with each new access token (signed in)
 *
 * @typedef {{ accessToken: string, receivedAt: number, renewAt: number }} HeldToken
 *
 * @typedef {{ type: 'token', accessToken: string, receivedAt: number }
 *   | { type: 'signed-out' }
 *   | { type: 'ask' }
 *   | { type: 'renew', stale: string }} Message
 */

export class Session {
  /** @type {SessionOptions} */
  #options
  /** @type {HeldToken | null} */
  #token = null
  // True once this tab is known to be signed out (onSignedOut was called for it).
  #signedOut = false
  // True in the tab that renews for all (or in a tab alone, without Web Locks or BroadcastChannel).
  #leader = false
  /** @type {Promise<string | null> | null} */
  #renewal = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer
  /** @type {BroadcastChannel | null} */
  #channel = null
  /** @type {Array<(token: string | null) => void>} */
  #waiters = []
  /** @type {() => void} */
  #releaseLeadership = () => {}

  /** @param {SessionOptions} options */
  constructor (options) {
    this.#options = options
  }

  /**
   * Joins the other tabs (or becomes the one that renews) and gets an access token: from the renewing
   * tab, or through the refresh cookie. Resolves to the token, or null (onSignedOut was called).
   * @returns {Promise<string | null>}
   */
  async start () {
    const locks = typeof navigator !== 'undefined' ? navigator.locks : undefined
    if (!locks || typeof BroadcastChannel !== 'function') {
      this.#leader = true
      return this.token()
    }
    this.#channel = new BroadcastChannel(CHANNEL)
    this.#channel.onmessage = (event) => this.#receive(event.data)
    // The lock is held for as long as this page lives (or until close()).
    const held = new Promise((resolve) => { this.#releaseLeadership = () => resolve(undefined) })
    const leading = await new Promise((resolve) => {
      void locks.request(LEADER_LOCK, { ifAvailable: true }, (lock) => {
        resolve(lock !== null)
        if (!lock) return undefined
        this.#lead()
        return held
      })
    })
    // Otherwise next in line: this tab renews for all once the ones before it are closed.
    if (!leading) void locks.request(LEADER_LOCK, () => { this.#lead(); return held })
    return this.token()
  }

  /**
   * The current access token, renewed first when it is due; null when signed out (a sign-in in another
   * tab, or start(), signs this one in again).
   * @returns {Promise<string | null>}
   */
  async token () {
    const held = this.#token
    if (held && Date.now() < held.renewAt) return held.accessToken
    if (!held && this.#signedOut) return null
    if (this.#leader) return this.#renew()
    return this.#fromLeader(held ? { type: 'renew', stale: held.accessToken } : { type: 'ask' })
  }

  /**
   * `fetch` of this origin's API with the bearer token. A 401 is answered by one renewal and one retry
   * (the body must be one that can be sent twice: a string, not a stream). An answer that is not 2xx is
   * thrown as an ApiError carrying its status, `error` and `message`.
   * @param {string} path
   * @param {RequestInit} [init]
   * @returns {Promise<Response>}
   */
  async fetch (path, init = {}) {
    let token = await this.token()
    if (!token) throw new ApiError(401, 'Unauthorized', 'Signed out: sign in again')
    let response = await this.#send(path, init, token)
    if (response.status === 401) {
      token = await this.#renewAfter(token)
      if (!token) throw new ApiError(401, 'Unauthorized', 'Signed out: sign in again')
      response = await this.#send(path, init, token)
    }
    if (!response.ok) throw await apiError(response)
    return response
  }

  /** Goes to the sign-in, which comes back to this page (its path and query). */
  signIn () {
    location.assign(signInUrl())
  }

  /** Ends this session (every tab of it) on the server and here; the refresh cookie is cleared. */
  async signOut () {
    await this.#leave('/api/auth/logout', 'POST')
  }

  /** Ends every session of the user, on every device, this one included. */
  async signOutEverywhere () {
    await this.#leave('/api/auth/sessions', 'DELETE')
  }

  /** Leaves the other tabs: another one takes over the renewals. */
  close () {
    clearTimeout(this.#timer)
    this.#releaseLeadership()
    this.#channel?.close()
    this.#channel = null
  }

  /**
   * @param {string} path
   * @param {RequestInit} init
   * @param {string} token
   */
  #send (path, init, token) {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${token}`)
    return fetch(path, { ...init, headers, credentials: 'same-origin' })
  }

  /**
   * @param {string} path
   * @param {string} method
   */
  async #leave (path, method) {
    try {
      if (this.#token) await this.fetch(path, { method })
    } finally {
      this.#end(true)
    }
  }

  /**
   * The token that replaces one the server refused: renewed once, whichever tab renews.
   * @param {string} refused
   */
  #renewAfter (refused) {
    const held = this.#token
    if (held && held.accessToken !== refused) return Promise.resolve(held.accessToken)
    if (this.#leader) return this.#renew()
    return this.#fromLeader({ type: 'renew', stale: refused })
  }

  /**
   * Renews through the refresh cookie, once at a time in this tab; the new token goes to every tab.
   * @returns {Promise<string | null>}
   */
  #renew () {
    this.#renewal ??= (async () => {
      // No session to renew: signed out, without a refused request to show for it.
      if (!hasSessionCookie()) {
        this.#end(true)
        return null
      }
      let response
      try {
        response = await fetch(REFRESH_URL, { method: 'POST', credentials: 'same-origin' })
      } catch {
        this.#retry()
        throw new ApiError(0, 'Network Error', 'The server could not be reached')
      }
      if (response.status === 401) {
        this.#end(true)
        return null
      }
      if (!response.ok) {
        this.#retry()
        throw await apiError(response)
      }
      const { accessToken } = /** @type {{ accessToken: string }} */ (await response.json())
      this.#accept({ accessToken, receivedAt: Date.now() }, true)
      return accessToken
    })().finally(() => { this.#renewal = null })
    return this.#renewal
  }

  /**
   * Asks the renewing tab; if no answer comes (it is being closed), renews here.
   * @param {Message} message
   * @returns {Promise<string | null>}
   */
  #fromLeader (message) {
    return new Promise((resolve, reject) => {
      /** @param {string | null} token */
      const answer = (token) => {
        clearTimeout(timer)
        resolve(token)
      }
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((waiter) => waiter !== answer)
        this.#renew().then(resolve, reject)
      }, ANSWER_WAIT_MS)
      this.#waiters.push(answer)
      this.#post(message)
    })
  }

  // This tab now renews for all: the tab that did was closed, or this one came first.
  #lead () {
    this.#leader = true
    if (this.#token) this.#schedule()
    else if (this.#waiters.length > 0) void this.#renew().catch(() => {})
  }

  /** @param {Message} message */
  #receive (message) {
    if (message.type === 'token') {
      this.#accept(message, false)
    } else if (message.type === 'signed-out') {
      this.#end(false)
    } else if (this.#leader) {
      // Another tab asks for the token (it opened, or the server refused the one it had).
      const held = this.#token
      const due = !held || Date.now() >= held.renewAt || (message.type === 'renew' && message.stale === held.accessToken)
      if (due) void this.#renew().catch(() => {})
      else this.#post({ type: 'token', accessToken: held.accessToken, receivedAt: held.receivedAt })
    }
  }

  /**
   * @param {{ accessToken: string, receivedAt: number }} fresh
   * @param {boolean} announce
   */
  #accept ({ accessToken, receivedAt }, announce) {
    const lifetime = lifetimeOf(accessToken)
    const renewAt = receivedAt + lifetime - renewalMargin(lifetime)
    // A token older than the one held (a late message) is not taken.
    if (this.#token && this.#token.renewAt > renewAt) return
    const changed = this.#token?.accessToken !== accessToken
    this.#token = { accessToken, receivedAt, renewAt }
    this.#signedOut = false
    if (announce) this.#post({ type: 'token', accessToken, receivedAt })
    if (this.#leader) this.#schedule()
    this.#settle(accessToken)
    if (changed) this.#options.onToken?.(accessToken)
  }

  /** @param {boolean} announce */
  #end (announce) {
    clearTimeout(this.#timer)
    this.#token = null
    if (announce) this.#post({ type: 'signed-out' })
    this.#settle(null)
    if (this.#signedOut) return
    this.#signedOut = true
    this.#options.onSignedOut()
  }

  /** @param {string | null} token */
  #settle (token) {
    const waiters = this.#waiters
    this.#waiters = []
    for (const waiter of waiters) waiter(token)
  }

  #schedule () {
    clearTimeout(this.#timer)
    const held = this.#token
    if (!held) return
    this.#timer = setTimeout(() => { void this.#renew().catch(() => {}) }, Math.max(0, held.renewAt - Date.now()))
  }

  #retry () {
    clearTimeout(this.#timer)
    if (this.#leader) this.#timer = setTimeout(() => { void this.#renew().catch(() => {}) }, RETRY_MS)
  }

  /** @param {Message} message */
  #post (message) {
    this.#channel?.postMessage(message)
  }
}
