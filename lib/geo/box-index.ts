import Flatbush from 'flatbush'
import { intersectsBox, splitBox, type Box, type Geometry } from './box.ts'

/** One placemark as the index takes it: its id, its geometry (GeoJSON text) and bounds, and its serialized summary. */
export interface IndexedPlacemark {
  id: number
  minLon: number
  minLat: number
  maxLon: number
  maxLat: number
  geometry: string
  json: string
}

/** Serialized summaries joined by commas, ready to be copied into a response body. */
export interface SummaryBytes {
  count: number
  byteLength: number
  copyTo(target: Buffer, offset: number): void
}

/** The same from summaries serialized one by one (the database path). */
export function joinSummaries(summaries: string[]): SummaryBytes {
  const bytes = Buffer.from(summaries.join(','))
  return { count: summaries.length, byteLength: bytes.length, copyTo: (target, offset) => { bytes.copy(target, offset) } }
}

const COMMA = 0x2c

// Summaries are packed into chunks of about this many bytes; an entry points into one of them.
const CHUNK_BYTES = 4 * 1024 * 1024

// A typed array twice as long, holding the old contents.
function grown<T extends Float64Array | Uint32Array>(a: T): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2)
  b.set(a)
  return b
}

/**
 * Collects placemarks in ascending id order, packing their summaries' bytes into a few large buffers
 * (outside the JS heap, so a million of them cost the garbage collector nothing), then builds the index.
 * Per-entry numbers go straight into typed arrays: a million entries take about 45 MB here.
 */
export class BoxIndexBuilder {
  private chunks: Buffer[] = []
  private pending: string[] = []
  private pendingBytes = 0
  private count = 0
  private bounds = new Float64Array(4 * 1024)
  private chunkOf = new Uint32Array(1024)
  private offsetOf = new Uint32Array(1024)
  private lengthOf = new Uint32Array(1024)
  private geometries: (string | undefined)[] = []
  private lastId = 0
  bytes = 0

  add(p: IndexedPlacemark): void {
    if (p.id <= this.lastId) throw new Error(`placemarks must come in ascending id order (${p.id} after ${this.lastId})`)
    this.lastId = p.id
    // A geometry without positions has infinite bounds and intersects nothing: it never enters the index.
    if (!(Number.isFinite(p.minLon) && Number.isFinite(p.minLat) && Number.isFinite(p.maxLon) && Number.isFinite(p.maxLat))) return
    const length = Buffer.byteLength(p.json)
    if (this.pendingBytes + length > CHUNK_BYTES && this.pending.length) this.flush()
    const i = this.count++
    if (i === this.chunkOf.length) {
      this.bounds = grown(this.bounds)
      this.chunkOf = grown(this.chunkOf)
      this.offsetOf = grown(this.offsetOf)
      this.lengthOf = grown(this.lengthOf)
    }
    const b = this.bounds
    b[4 * i] = p.minLon
    b[4 * i + 1] = p.minLat
    b[4 * i + 2] = p.maxLon
    b[4 * i + 3] = p.maxLat
    this.chunkOf[i] = this.chunks.length
    this.offsetOf[i] = this.pendingBytes
    this.lengthOf[i] = length
    // Bounds of a single position decide exactly; only a geometry with extent may need its own test.
    this.geometries.push(p.minLon === p.maxLon && p.minLat === p.maxLat ? undefined : p.geometry)
    this.pending.push(p.json)
    this.pendingBytes += length
    this.bytes += length
  }

  private flush(): void {
    this.chunks.push(Buffer.from(this.pending.join('')))
    this.pending = []
    this.pendingBytes = 0
  }

  finish(): BoxIndex {
    if (this.pending.length) this.flush()
    const n = this.count
    return new BoxIndex(n, this.bounds.slice(0, 4 * n), this.chunks, this.chunkOf.slice(0, n), this.offsetOf.slice(0, n), this.lengthOf.slice(0, n), this.geometries, this.bytes)
  }
}

/**
 * A static R-tree (packed Hilbert order, flatbush) over placemark bounds, answering box queries with
 * the summaries' stored bytes. Semantics match the database query exactly: placemarks whose geometry
 * intersects the box (boundary inclusive, antimeridian boxes split in two), in ascending id order.
 */
export class BoxIndex {
  private readonly tree: Flatbush | null

  constructor(readonly size: number, private readonly bounds: Float64Array, private readonly chunks: Buffer[],
    private readonly chunkOf: Uint32Array, private readonly offsetOf: Uint32Array, private readonly lengthOf: Uint32Array,
    private readonly geometries: (string | undefined)[], readonly bytes: number) {
    if (size === 0) {
      this.tree = null
      return
    }
    const tree = new Flatbush(size)
    for (let i = 0; i < size; i++) tree.add(bounds[4 * i], bounds[4 * i + 1], bounds[4 * i + 2], bounds[4 * i + 3])
    tree.finish()
    this.tree = tree
  }

  /** Memory held: summaries, tree and the per-entry arrays. */
  get memoryBytes(): number {
    return this.bytes + (this.tree ? this.tree.data.byteLength : 0) + this.bounds.byteLength +
      this.chunkOf.byteLength + this.offsetOf.byteLength + this.lengthOf.byteLength
  }

  // Bounds wholly inside a box: every position is inside, so the geometry intersects it.
  private inside(i: number, b: Box): boolean {
    const o = 4 * i
    return this.bounds[o] >= b.minLon && this.bounds[o + 1] >= b.minLat && this.bounds[o + 2] <= b.maxLon && this.bounds[o + 3] <= b.maxLat
  }

  /** The serialized summaries of the first `limit` placemarks (by id) intersecting the box. */
  search(box: Box, limit: number): SummaryBytes {
    const entries = this.tree ? this.entriesIn(box, limit) : []
    let byteLength = Math.max(0, entries.length - 1)
    for (const i of entries) byteLength += this.lengthOf[i]
    return {
      count: entries.length,
      byteLength,
      copyTo: (target, offset) => {
        let at = offset
        for (let k = 0; k < entries.length; k++) {
          if (k) target[at++] = COMMA
          const i = entries[k]
          const start = this.offsetOf[i]
          // One copy per summary, straight from its chunk (no intermediate views or concatenation).
          at += this.chunks[this.chunkOf[i]].copy(target, at, start, start + this.lengthOf[i])
        }
      }
    }
  }

  private entriesIn(box: Box, limit: number): number[] {
    const parts = splitBox(box)
    let found = this.tree!.search(parts[0].minLon, parts[0].minLat, parts[0].maxLon, parts[0].maxLat)
    if (parts.length > 1) found = found.concat(this.tree!.search(parts[1].minLon, parts[1].minLat, parts[1].maxLon, parts[1].maxLat))
    // Entries were added in id order, so their positions sort as their ids do (a typed array sorts
    // numerically without a comparator, several times faster).
    const sorted = new Uint32Array(found).sort()
    const out: number[] = []
    for (let k = 0; k < sorted.length && out.length < limit; k++) {
      const i = sorted[k]
      // An entry touching the antimeridian can be found by both halves.
      if (k > 0 && sorted[k - 1] === i) continue
      if (this.matches(i, box, parts)) out.push(i)
    }
    return out
  }

  private matches(i: number, box: Box, parts: Box[]): boolean {
    const geometry = this.geometries[i]
    if (geometry === undefined) return true
    for (const part of parts) if (this.inside(i, part)) return true
    // Only a geometry whose bounds straddle the box's edge needs the exact test.
    return intersectsBox(JSON.parse(geometry) as Geometry, box)
  }
}
