/*
 * A guild's live activity: its event stream (GET /api/guilds/:guildId/events), read with fetch because
 * an EventSource cannot send the bearer token. A stream that drops, or that the server ends (`event: end`:
 * the token expired, the session ended, the server stops), is opened again with a fresh token, after a
 * growing pause when it keeps failing.
 */
import { ApiError } from '../shared/session.js'

/**
 * @typedef {{ guildId: string, events: number, types: Record<string, number>, lastEventAt: string | null }} Activity
 * @typedef {'off' | 'connecting' | 'live' | 'retrying' | 'refused'} LiveState
 * @typedef {object} LiveOptions
 * @property {(path: string, init: RequestInit) => Promise<Response>} fetch the session's fetch (bearer token, renewal on a 401)
 * @property {(activity: Activity) => void} onActivity
 * @property {(state: LiveState, detail?: string) => void} onState
 */

// Pauses before reconnecting after failures in a row (then the last one, with some spread).
const BACKOFF_MS = [1000, 2000, 4000, 8000, 15_000, 30_000]

/**
 * The events of a text/event-stream as they arrive: `[name, data]` for each, comments left out.
 * @param {ReadableStream<Uint8Array>} body
 * @returns {AsyncGenerator<[string, string]>}
 */
export async function * serverSentEvents (body) {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let pending = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      pending += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n')
      for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
        const block = pending.slice(0, end)
        pending = pending.slice(end + 2)
        let name = 'message'
        /** @type {string[]} */
        const data = []
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue
          const colon = line.indexOf(':')
          const field = colon < 0 ? line : line.slice(0, colon)
          const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'event') name = text
          else if (field === 'data') data.push(text)
        }
        if (data.length > 0) yield [name, data.join('\n')]
      }
    }
  } finally {
    reader.releaseLock()
  }
}

export class LiveActivity {
  /** @type {LiveOptions} */
  #options
  /** @type {string | null} */
  #guild = null
  /** @type {AbortController | null} */
  #abort = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer
  #failures = 0

  /** @param {LiveOptions} options */
  constructor (options) {
    this.#options = options
  }

  /**
   * Follows a guild's stream (null: none). Following the guild it already follows changes nothing.
   * @param {string | null} guildId
   */
  follow (guildId) {
    if (guildId === this.#guild) return
    this.stop()
    this.#guild = guildId
    if (guildId !== null) this.#open(guildId)
  }

  /** Opens the stream again at once (back online), unless it is open. */
  resume () {
    if (this.#guild !== null && this.#abort === null) {
      clearTimeout(this.#timer)
      this.#failures = 0
      this.#open(this.#guild)
    }
  }

  stop () {
    clearTimeout(this.#timer)
    this.#abort?.abort()
    this.#abort = null
    if (this.#guild !== null) this.#options.onState('off')
    this.#guild = null
  }

  /** @param {string} guildId */
  async #open (guildId) {
    const abort = new AbortController()
    this.#abort = abort
    this.#options.onState('connecting')
    /** @type {string | null} */
    let ended = null
    try {
      const response = await this.#options.fetch(`/api/guilds/${encodeURIComponent(guildId)}/events`, { signal: abort.signal, headers: { accept: 'text/event-stream' } })
      if (!response.body) throw new Error('the stream has no body')
      this.#options.onState('live')
      for await (const [name, data] of serverSentEvents(response.body)) {
        // A stream that delivers is a working one: the next failure starts the pauses over.
        this.#failures = 0
        if (name === 'activity') this.#options.onActivity(JSON.parse(data))
        else if (name === 'end') ended = /** @type {{ reason?: string }} */ (JSON.parse(data)).reason ?? 'ended'
      }
    } catch (err) {
      if (abort.signal.aborted) return
      // Refusals that a new try would meet again (no permission, signed out) end the following.
      if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 400 || err.status === 404)) {
        this.#abort = null
        this.#options.onState('refused', `${err.status} ${err.error}: ${err.message}`)
        return
      }
    }
    if (abort.signal.aborted) return
    this.#abort = null
    // The token's end is expected: reconnect at once with the renewed token; anything else after a pause.
    const delay = ended === 'token expired' ? 0 : BACKOFF_MS[Math.min(this.#failures, BACKOFF_MS.length - 1)] * (0.8 + 0.4 * Math.random())
    if (ended !== 'token expired') this.#failures++
    this.#options.onState('retrying', ended ?? undefined)
    this.#timer = setTimeout(() => { if (this.#guild === guildId && this.#abort === null) this.#open(guildId) }, delay)
  }
}
