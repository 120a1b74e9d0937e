import { Readable } from 'node:stream'

export interface EventStreamOptions {
  // A comment line this often, so that proxies and clients see the connection alive.
  heartbeatMs: number
  // At most one message this often; updates in between are merged into the next one.
  minIntervalMs: number
  // Bytes written and not yet taken by the client past which nothing more is written (updates wait, merged).
  maxBufferedBytes: number
  // A client that stays past maxBufferedBytes this long is cut off.
  blockedMs: number
}

// Where the bytes go: its unsent bytes are measured, and it is destroyed to cut a client off.
export interface EventSink {
  readonly writableLength: number
  destroy(): void
}

export interface EventKind<U> {
  event: string
  merge(pending: U | null, update: U): U
  data(pending: U): unknown
}

/** One server-sent event: its type and its data as one line of JSON (JSON never holds a raw line break). */
export const sseMessage = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * A text/event-stream body for reply.send(): updates are published to it, and it writes at most one
 * message per minIntervalMs with every update since the previous one merged in, plus a comment line every
 * heartbeatMs. It holds at most one pending update whatever the client does: while the client does not take
 * what was written (more than maxBufferedBytes waiting), nothing more is written and updates keep merging;
 * a client stuck that way for blockedMs is cut off. `finish` writes a last message and ends the body.
 */
export class EventStream<U> extends Readable {
  readonly #options: EventStreamOptions
  readonly #kind: EventKind<U>
  #sink: EventSink | null = null
  #pending: U | null = null
  #lastSent = Number.NEGATIVE_INFINITY
  #flushTimer: NodeJS.Timeout | null = null
  #blockedSince: number | null = null
  readonly #heartbeat: NodeJS.Timeout
  #finished = false
  // Messages written (heartbeats and the last message aside).
  sent = 0

  constructor (options: EventStreamOptions, kind: EventKind<U>) {
    super()
    this.#options = options
    this.#kind = kind
    this.#heartbeat = setInterval(() => this.#beat(), options.heartbeatMs).unref()
    // A first line at once: the answer's headers leave with it, so the client knows the stream is open.
    this.push(': open\n\n')
  }

  /** The response the body is piped to, whose unsent bytes count as the client's backlog. */
  attach (sink: EventSink): void {
    this.#sink = sink
  }

  /** The update not yet written, if any. */
  get pending (): U | null {
    return this.#pending
  }

  /** Bytes written and not yet taken by the client: this body's buffer and the response's. */
  get bufferedBytes (): number {
    return this.readableLength + (this.#sink?.writableLength ?? 0)
  }

  get finished (): boolean {
    return this.#finished
  }

  publish (update: U): void {
    if (this.#finished) return
    this.#pending = this.#kind.merge(this.#pending, update)
    this.#flush()
  }

  /** Writes the last message and ends the body; a client that takes nothing is cut off instead. */
  finish (event: string, data: unknown): void {
    if (this.#finished) return
    this.#finished = true
    this.#stopTimers()
    this.#pending = null
    if (this.#isBlocked()) {
      this.#cut()
      return
    }
    this.push(sseMessage(event, data))
    this.push(null)
  }

  override _read (): void {
    // The client took what was written: a message waiting for it may go.
    this.#flush()
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    this.#finished = true
    this.#stopTimers()
    this.#pending = null
    callback(err)
  }

  #flush (): void {
    if (this.#finished || this.#pending === null || this.#flushTimer !== null) return
    const wait = this.#lastSent + this.#options.minIntervalMs - Date.now()
    // Too soon after the previous message, or the client is behind (and maybe cut off): tried again later.
    if (wait > 0 || this.#isBlocked()) {
      if (this.#finished) return
      this.#flushTimer = setTimeout(() => {
        this.#flushTimer = null
        this.#flush()
      }, wait > 0 ? wait : this.#options.minIntervalMs).unref()
      return
    }
    const message = sseMessage(this.#kind.event, this.#kind.data(this.#pending))
    this.#pending = null
    this.#lastSent = Date.now()
    this.sent++
    this.push(message)
  }

  #beat (): void {
    if (!this.#isBlocked()) this.push(': keep-alive\n\n')
  }

  // Whether the client is behind, cutting it off once it has been behind for blockedMs.
  #isBlocked (): boolean {
    if (this.bufferedBytes <= this.#options.maxBufferedBytes) {
      this.#blockedSince = null
      return false
    }
    const now = Date.now()
    this.#blockedSince ??= now
    if (now - this.#blockedSince >= this.#options.blockedMs) this.#cut()
    return true
  }

  #cut (): void {
    if (this.destroyed) return
    this.#finished = true
    this.#stopTimers()
    this.#pending = null
    if (this.#sink) this.#sink.destroy()
    else this.destroy()
  }

  #stopTimers (): void {
    clearInterval(this.#heartbeat)
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer)
    this.#flushTimer = null
  }
}
