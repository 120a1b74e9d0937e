/**
 * The set of revoked session ids that bearer checks consult with no database round trip. An access
 * token outlives its session's revocation by at most its own lifetime, so entries older than that are
 * dropped. The auth plugin fills it from the database at start and from the change bus after.
 */
export class RevocationList {
  #revoked = new Map<string, number>()
  readonly #keepMs: number

  constructor (accessTtlMs: number) {
    this.#keepMs = accessTtlMs + 60_000
  }

  has (sessionId: string): boolean {
    return this.#revoked.has(sessionId)
  }

  get size (): number {
    return this.#revoked.size
  }

  add (sessionId: string, at = Date.now()): void {
    if (!this.#revoked.has(sessionId)) this.#revoked.set(sessionId, at)
  }

  /** Drops the entries no access token can outlive any more. */
  prune (now = Date.now()): void {
    const horizon = now - this.#keepMs
    for (const [id, at] of this.#revoked) if (at < horizon) this.#revoked.delete(id)
  }
}
