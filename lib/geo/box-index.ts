import Flatbush from 'flatbush'
import { packGeometry, packedIntersectsBox, splitBox, type Box, type Geometry } from './box.ts'

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
export function joinSummaries (summaries: string[]): SummaryBytes {
  const bytes = Buffer.from(summaries.join(','))
  return { count: summaries.length, byteLength: bytes.length, copyTo: (target, offset) => { bytes.copy(target, offset) } }
}

const COMMA = 0x2c

// Summaries are packed into chunks of about this many bytes; an entry points into one of them.
const CHUNK_BYTES = 4 * 1024 * 1024

// A typed array twice as long, holding the old contents.
function grown<T extends Float64Array | Uint32Array> (a: T): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2)
  b.set(a)
  return b
}

// An entry whose geometry is a single position: its bounds decide exactly, no packed geometry kept.
const NO_GEOMETRY = 0xffffffff

/**
 * Collects placemarks, packing their summaries' bytes into a few large buffers and their geometries
 * into one Float64Array (outside the JS heap, so a million of them cost the garbage collector nothing),
 * then builds the index. Entries are stored in the order they are added: added in spatial order, the
 * data of one box query sits together in memory (a million summaries fill hundreds of MB, and a query's
 * hundred reads scattered across them each miss the CPU's caches).
 */
export class BoxIndexBuilder {
  private chunks: Buffer[] = []
  private pending: string[] = []
  private pendingBytes = 0
  private count = 0
  private ids = new Uint32Array(1024)
  private bounds = new Float64Array(4 * 1024)
  private chunkOf = new Uint32Array(1024)
  private offsetOf = new Uint32Array(1024)
  private lengthOf = new Uint32Array(1024)
  private geometryAt = new Uint32Array(1024)
  private packed = new Float64Array(1024)
  private packedLength = 0
  bytes = 0

  add (p: IndexedPlacemark): void {
    if (!Number.isInteger(p.id) || p.id < 0 || p.id > 0xffffffff) throw new Error(`placemark id ${p.id} is not a 32-bit unsigned integer`)
    // A geometry without positions has infinite bounds and intersects nothing: it never enters the index.
    if (!(Number.isFinite(p.minLon) && Number.isFinite(p.minLat) && Number.isFinite(p.maxLon) && Number.isFinite(p.maxLat))) return
    const length = Buffer.byteLength(p.json)
    if (this.pendingBytes + length > CHUNK_BYTES && this.pending.length) this.flush()
    const i = this.count++
    if (i === this.ids.length) {
      this.ids = grown(this.ids)
      this.bounds = grown(this.bounds)
      this.chunkOf = grown(this.chunkOf)
      this.offsetOf = grown(this.offsetOf)
      this.lengthOf = grown(this.lengthOf)
      this.geometryAt = grown(this.geometryAt)
    }
    this.ids[i] = p.id
    const b = this.bounds
    b[4 * i] = p.minLon
    b[4 * i + 1] = p.minLat
    b[4 * i + 2] = p.maxLon
    b[4 * i + 3] = p.maxLat
    this.chunkOf[i] = this.chunks.length
    this.offsetOf[i] = this.pendingBytes
    this.lengthOf[i] = length
    // Bounds of a single position decide exactly; only a geometry with extent may need its own test.
    this.geometryAt[i] = p.minLon === p.maxLon && p.minLat === p.maxLat ? NO_GEOMETRY : this.pack(packGeometry(JSON.parse(p.geometry) as Geometry))
    this.pending.push(p.json)
    this.pendingBytes += length
    this.bytes += length
  }

  private pack (numbers: number[]): number {
    const at = this.packedLength
    while (at + numbers.length > this.packed.length) this.packed = grown(this.packed)
    this.packed.set(numbers, at)
    this.packedLength += numbers.length
    return at
  }

  private flush (): void {
    this.chunks.push(Buffer.from(this.pending.join('')))
    this.pending = []
    this.pendingBytes = 0
  }

  finish (): BoxIndex {
    if (this.pending.length) this.flush()
    const n = this.count
    return new BoxIndex(n, this.ids.slice(0, n), this.bounds.slice(0, 4 * n), this.chunks, this.chunkOf.slice(0, n), this.offsetOf.slice(0, n),
      this.lengthOf.slice(0, n), this.geometryAt.slice(0, n), this.packed.slice(0, this.packedLength), this.bytes)
  }
}

// Candidates in more runs of ascending ids than this (entries not added in spatial order) are sorted by id instead.
const MAX_RUNS = 64

/**
 * A static R-tree (packed Hilbert order, flatbush) over placemark bounds, answering box queries with
 * the summaries' stored bytes. Semantics match the database query exactly: placemarks whose geometry
 * intersects the box (boundary inclusive, antimeridian boxes split in two), in ascending id order.
 */
export class BoxIndex {
  private readonly tree: Flatbush | null

  readonly size: number
  private readonly ids: Uint32Array
  private readonly bounds: Float64Array
  private readonly chunks: Buffer[]
  private readonly chunkOf: Uint32Array
  private readonly offsetOf: Uint32Array
  private readonly lengthOf: Uint32Array
  private readonly geometryAt: Uint32Array
  private readonly packed: Float64Array
  readonly bytes: number
  constructor (size: number, ids: Uint32Array, bounds: Float64Array, chunks: Buffer[], chunkOf: Uint32Array, offsetOf: Uint32Array, lengthOf: Uint32Array, geometryAt: Uint32Array, packed: Float64Array, bytes: number) {
    this.size = size
    this.ids = ids
    this.bounds = bounds
    this.chunks = chunks
    this.chunkOf = chunkOf
    this.offsetOf = offsetOf
    this.lengthOf = lengthOf
    this.geometryAt = geometryAt
    this.packed = packed
    this.bytes = bytes
    if (size === 0) {
      this.tree = null
      return
    }
    const tree = new Flatbush(size)
    for (let i = 0; i < size; i++) tree.add(bounds[4 * i], bounds[4 * i + 1], bounds[4 * i + 2], bounds[4 * i + 3])
    tree.finish()
    this.tree = tree
  }

  /** Memory held: summaries, tree, packed geometries and the per-entry arrays. */
  get memoryBytes (): number {
    return this.bytes + (this.tree ? this.tree.data.byteLength : 0) + this.ids.byteLength + this.bounds.byteLength +
      this.chunkOf.byteLength + this.offsetOf.byteLength + this.lengthOf.byteLength + this.geometryAt.byteLength + this.packed.byteLength
  }

  // Bounds wholly inside a box: every position is inside, so the geometry intersects it.
  private inside (i: number, b: Box): boolean {
    const o = 4 * i
    return this.bounds[o] >= b.minLon && this.bounds[o + 1] >= b.minLat && this.bounds[o + 2] <= b.maxLon && this.bounds[o + 3] <= b.maxLat
  }

  /** The serialized summaries of the first `limit` placemarks (by id) intersecting the box. */
  search (box: Box, limit: number): SummaryBytes {
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

  private entriesIn (box: Box, limit: number): number[] {
    const parts = splitBox(box)
    let found = this.tree!.search(parts[0].minLon, parts[0].minLat, parts[0].maxLon, parts[0].maxLat)
    if (parts.length > 1) found = found.concat(this.tree!.search(parts[1].minLon, parts[1].minLat, parts[1].maxLon, parts[1].maxLat))
    // Sorted by position, the candidates fall into a few runs of ascending ids: the loader stores entries
    // cell by cell, each cell in id order. Merging the runs gives id order without sorting by id; an
    // entry touching the antimeridian, found by both halves of the box, shows up twice and is taken once.
    const sorted = this.sortedPositions(found)
    const ids = this.ids
    const starts: number[] = []
    let n = 0
    for (let k = 0; k < sorted.length; k++) {
      const i = sorted[k]
      if (n > 0 && sorted[n - 1] === i) continue
      if (n === 0 || ids[i] < ids[sorted[n - 1]]) starts.push(n)
      sorted[n++] = i
    }
    if (starts.length > MAX_RUNS) return this.filter(Array.from(sorted.subarray(0, n)).sort((a, b) => ids[a] - ids[b]), limit, box, parts)
    const ends = starts.map((_, r) => (r + 1 < starts.length ? starts[r + 1] : n))
    const out: number[] = []
    for (;;) {
      let best = -1
      let bestId = Infinity
      for (let r = 0; r < starts.length; r++) {
        if (starts[r] < ends[r] && ids[sorted[starts[r]]] < bestId) {
          best = r
          bestId = ids[sorted[starts[r]]]
        }
      }
      if (best === -1) return out
      const i = sorted[starts[best]++]
      if (this.matches(i, box, parts)) {
        out.push(i)
        if (out.length === limit) return out
      }
    }
  }

  private scratch = new Uint32Array(1024)
  private spare = new Uint32Array(1024)

  /**
   * The positions in ascending order: a radix sort, one pass per byte that varies, into a reused buffer
   * (valid until the next call). Typed arrays' own sort took a quarter of a box query's time.
   */
  private sortedPositions (found: number[]): Uint32Array {
    const n = found.length
    if (this.scratch.length < n) {
      this.scratch = new Uint32Array(2 * n)
      this.spare = new Uint32Array(2 * n)
    }
    let a = this.scratch
    let b = this.spare
    let or = 0
    let and = 0xffffffff
    for (let k = 0; k < n; k++) {
      a[k] = found[k]
      or |= found[k]
      and &= found[k]
    }
    const counts = new Uint32Array(256)
    for (let shift = 0; shift < 32; shift += 8) {
      // A byte equal in every position leaves the order as it is.
      if ((((or ^ and) >>> shift) & 0xff) === 0) continue
      counts.fill(0)
      for (let k = 0; k < n; k++) counts[(a[k] >>> shift) & 0xff]++
      for (let d = 0, sum = 0; d < 256; d++) {
        const c = counts[d]
        counts[d] = sum
        sum += c
      }
      for (let k = 0; k < n; k++) b[counts[(a[k] >>> shift) & 0xff]++] = a[k]
      const t = a
      a = b
      b = t
    }
    this.scratch = a
    this.spare = b
    return a.subarray(0, n)
  }

  // The first `limit` entries of a list in id order that intersect the box.
  private filter (entries: number[], limit: number, box: Box, parts: Box[]): number[] {
    const out: number[] = []
    for (let k = 0; k < entries.length && out.length < limit; k++) if (this.matches(entries[k], box, parts)) out.push(entries[k])
    return out
  }

  private matches (i: number, box: Box, parts: Box[]): boolean {
    const at = this.geometryAt[i]
    if (at === NO_GEOMETRY) return true
    for (const part of parts) if (this.inside(i, part)) return true
    // Only a geometry whose bounds straddle the box's edge needs the exact test.
    return packedIntersectsBox(this.packed, at, box)
  }
}
