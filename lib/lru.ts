// A size-bounded LRU map: Map keeps insertion order, so re-inserting on read marks an entry as recent.
export class LruCache<V> {
  #map = new Map<string, { value: V; size: number }>()
  #bytes = 0

  // Without maxBytes (and sizes), only the number of entries is bounded.
  constructor(private readonly maxEntries: number, private readonly maxBytes = Infinity) {}

  get(key: string): V | undefined {
    const entry = this.#map.get(key)
    if (!entry) return undefined
    this.#map.delete(key)
    this.#map.set(key, entry)
    return entry.value
  }

  set(key: string, value: V, size = 1): void {
    if (size > this.maxBytes) return
    const old = this.#map.get(key)
    if (old) {
      this.#bytes -= old.size
      this.#map.delete(key)
    }
    this.#map.set(key, { value, size })
    this.#bytes += size
    while (this.#map.size > this.maxEntries || this.#bytes > this.maxBytes) {
      const oldest = this.#map.keys().next()
      if (oldest.done) break
      this.#bytes -= this.#map.get(oldest.value)!.size
      this.#map.delete(oldest.value)
    }
  }

  delete(key: string): void {
    const entry = this.#map.get(key)
    if (!entry) return
    this.#bytes -= entry.size
    this.#map.delete(key)
  }

  clear(): void {
    this.#map.clear()
    this.#bytes = 0
  }

  get size(): number {
    return this.#map.size
  }

  get bytes(): number {
    return this.#bytes
  }
}
