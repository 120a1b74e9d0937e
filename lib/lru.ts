interface Entry<V> {
  key: string
  value: V
  size: number
  // Neighbours in recency order: `newer` towards the most recently used end.
  older: Entry<V> | null
  newer: Entry<V> | null
}

/**
 * A size-bounded LRU map. Entries sit in a doubly linked list by recency beside the Map that finds
 * them, so a read moves its entry to the front with a few pointer writes. (Re-inserting into the Map to
 * mark recency, as with Map's insertion order, leaves a tombstone per read that the table keeps
 * rehashing away: about a microsecond per read of a hot key, on every cached answer and bearer check.)
 */
export class LruCache<V> {
  #map = new Map<string, Entry<V>>()
  #newest: Entry<V> | null = null
  #oldest: Entry<V> | null = null
  #bytes = 0

  // Without maxBytes (and sizes), only the number of entries is bounded.
  constructor(private readonly maxEntries: number, private readonly maxBytes = Infinity) {}

  get(key: string): V | undefined {
    const entry = this.#map.get(key)
    if (entry === undefined) return undefined
    if (entry !== this.#newest) {
      this.#unlink(entry)
      this.#pushNewest(entry)
    }
    return entry.value
  }

  set(key: string, value: V, size = 1): void {
    if (size > this.maxBytes) return
    this.delete(key)
    const entry: Entry<V> = { key, value, size, older: null, newer: null }
    this.#map.set(key, entry)
    this.#pushNewest(entry)
    this.#bytes += size
    while (this.#oldest !== null && (this.#map.size > this.maxEntries || this.#bytes > this.maxBytes)) this.delete(this.#oldest.key)
  }

  delete(key: string): void {
    const entry = this.#map.get(key)
    if (entry === undefined) return
    this.#map.delete(key)
    this.#unlink(entry)
    this.#bytes -= entry.size
  }

  clear(): void {
    this.#map.clear()
    this.#newest = this.#oldest = null
    this.#bytes = 0
  }

  get size(): number {
    return this.#map.size
  }

  get bytes(): number {
    return this.#bytes
  }

  /** Keys from the most to the least recently used. */
  *keys(): IterableIterator<string> {
    for (let e = this.#newest; e !== null; e = e.older) yield e.key
  }

  #unlink(entry: Entry<V>): void {
    if (entry.older) entry.older.newer = entry.newer
    else this.#oldest = entry.newer
    if (entry.newer) entry.newer.older = entry.older
    else this.#newest = entry.older
    entry.older = entry.newer = null
  }

  #pushNewest(entry: Entry<V>): void {
    entry.older = this.#newest
    if (this.#newest) this.#newest.newer = entry
    else this.#oldest = entry
    this.#newest = entry
  }
}
