/**
 * Exact point clusters for vector tiles: every Point placemark has one position on a fixed grid of
 * Web Mercator cells, 2^26 × 2^26 over the world (the cells of zoom 22's tiles split 16 × 16). Sorted
 * along a Z-order curve (Morton keys), the points of any tile, and of any cell of a 16 × 16 grid inside
 * it, are one run of consecutive keys: a tile's clusters are found by binary searches, at a cost that
 * depends on its cells (at most 256), not on the points it covers. A point belongs to the one cell its
 * own coordinates fall in (west and north edges inclusive), so over any set of tiles the counts add up
 * to the points in them, each counted once.
 *
 * Per point the grid keeps its key (8 bytes), the placemark it is (4) and its colour's number (2); per
 * block of BLOCK points, the sums of positions and a histogram of colours, so that a large cell's
 * centre and most common colour cost its blocks, not its points.
 */

/** Web Mercator's latitude limit: the world's tiles end there; points beyond it fall in no tile. */
export const MAX_MERCATOR_LAT = 85.0511287798066

/** Grid cells per tile side at a cluster zoom: 16, each 256 of the tile's 4096 units (32 px of a 512 px tile). */
export const GRID_CELLS = 16
const GRID_BITS = 4
/** The finest level of the grid: 2^26 cells a side (zoom 22 + 4). */
export const GRID_LEVEL = 26
const SIDE = 2 ** GRID_LEVEL
const HALF = 2 ** 26
const LOW = 13
const LOW_MASK = (1 << LOW) - 1
// Points per block of sums and histograms.
const BLOCK = 512

/** Web Mercator x of a longitude, 0 (180° W) to 1 (180° E). */
export function mercatorX (lon: number): number {
  return (lon + 180) / 360
}

/** Web Mercator y of a latitude, 0 at the north edge (85.05° N) to 1 at the south edge. */
export function mercatorY (lat: number): number {
  const r = (lat * Math.PI) / 180
  return (1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2
}

/**
 * A position's grid cell at GRID_LEVEL, [x, y], or null beyond Web Mercator's latitudes. The east edge
 * (180°) and the south edge fall in the last column and row.
 */
export function gridCell (lon: number, lat: number): [number, number] | null {
  if (!(Math.abs(lat) <= MAX_MERCATOR_LAT) || !(Math.abs(lon) <= 180)) return null
  const clamp = (v: number) => (v < 0 ? 0 : v >= SIDE ? SIDE - 1 : v)
  return [clamp(Math.floor(mercatorX(lon) * SIDE)), clamp(Math.floor(mercatorY(lat) * SIDE))]
}

// The low 13 bits of v spread over the even bits of 26.
function spread (v: number): number {
  v &= LOW_MASK
  v = (v | (v << 8)) & 0x00ff00ff
  v = (v | (v << 4)) & 0x0f0f0f0f
  v = (v | (v << 2)) & 0x33333333
  return (v | (v << 1)) & 0x55555555
}

// The even bits of v gathered into 13.
function compact (v: number): number {
  v &= 0x55555555
  v = (v | (v >>> 1)) & 0x33333333
  v = (v | (v >>> 2)) & 0x0f0f0f0f
  v = (v | (v >>> 4)) & 0x00ff00ff
  return (v | (v >>> 8)) & 0x0000ffff
}

const keyHigh = (x: number, y: number) => spread(x >>> LOW) | (spread(y >>> LOW) << 1)
const keyLow = (x: number, y: number) => spread(x) | (spread(y) << 1)

/** The Morton key of cell (x, y) at GRID_LEVEL: 52 bits, exact in a double. */
export function mortonKey (x: number, y: number): number {
  return keyHigh(x, y) * HALF + keyLow(x, y)
}

function decodeX (key: number): number {
  const hi = Math.floor(key / HALF)
  return compact(key - hi * HALF) | (compact(hi) << LOW)
}

function decodeY (key: number): number {
  const hi = Math.floor(key / HALF)
  return compact((key - hi * HALF) >>> 1) | (compact(hi >>> 1) << LOW)
}

/** The mean of `n` positions summing to `sum` (grid units), in tile units of tile t at zoom z (0..4096). */
export function tileUnits (sum: number, n: number, z: number, t: number): number {
  return Math.min(4096, Math.max(0, Math.round((sum / n) * (4096 / 2 ** (GRID_LEVEL - z)) - t * 4096)))
}

/** Of colours and their counts, the one most share; a tie goes to the first in code point order, none ('') first of all. */
export function majorityColour (counts: Map<string, number>): string | null {
  let best = ''
  let most = -1
  for (const [c, n] of counts) {
    if (n > most || (n === most && c < best)) {
      best = c
      most = n
    }
  }
  return best === '' ? null : best
}

/** One cell of a tile's grid: its points' count, centre (tile units), most common colour and, alone, its point. */
export interface GridCell {
  count: number
  /** The mean position of its points, in tile units (0..4096). */
  x: number
  y: number
  /** The colour most of its points share (null: most have none). */
  color: string | null
  /** The point's own item (a box index entry, or a position in the list the grid was built from) when it is alone. */
  item: number
}

/** Points for a grid: cell positions at GRID_LEVEL, the item each is, and its colour's number in `palette` (0: none). */
export interface GridPoints {
  x: Uint32Array
  y: Uint32Array
  items: Uint32Array
  colours: Uint16Array
  count: number
}

/** A PointGrid as plain arrays, for postMessage (every buffer its own). */
export interface PointGridParts {
  keys: Float64Array
  items: Uint32Array
  colours: Uint16Array
  palette: string[]
}

export class PointGrid {
  readonly size: number
  private readonly keys: Float64Array
  private readonly items: Uint32Array
  private readonly colours: Uint16Array
  readonly palette: string[]
  private readonly sumX: Float64Array
  private readonly sumY: Float64Array
  private readonly histStart: Uint32Array
  private readonly histColour: Uint16Array
  private readonly histCount: Uint32Array
  private tally: Uint32Array
  private touched: number[] = []

  /** Points already sorted by key. */
  constructor (keys: Float64Array, items: Uint32Array, colours: Uint16Array, palette: string[]) {
    this.size = keys.length
    this.keys = keys
    this.items = items
    this.colours = colours
    this.palette = palette
    const blocks = Math.ceil(this.size / BLOCK)
    this.sumX = new Float64Array(blocks)
    this.sumY = new Float64Array(blocks)
    this.histStart = new Uint32Array(blocks + 1)
    this.tally = new Uint32Array(Math.max(1, palette.length))
    const histColour: number[] = []
    const histCount: number[] = []
    for (let b = 0; b < blocks; b++) {
      let sx = 0
      let sy = 0
      const end = Math.min(this.size, (b + 1) * BLOCK)
      for (let k = b * BLOCK; k < end; k++) {
        sx += decodeX(keys[k])
        sy += decodeY(keys[k])
        this.count(colours[k])
      }
      this.sumX[b] = sx
      this.sumY[b] = sy
      for (const c of this.touched) {
        histColour.push(c)
        histCount.push(this.tally[c])
        this.tally[c] = 0
      }
      this.touched.length = 0
      this.histStart[b + 1] = histColour.length
    }
    this.histColour = Uint16Array.from(histColour)
    this.histCount = Uint32Array.from(histCount)
  }

  /** A grid of these points, sorted here (a radix sort of their keys). */
  static build (points: GridPoints, palette: string[]): PointGrid {
    const n = points.count
    const hi = new Uint32Array(n)
    const lo = new Uint32Array(n)
    for (let k = 0; k < n; k++) {
      hi[k] = keyHigh(points.x[k], points.y[k])
      lo[k] = keyLow(points.x[k], points.y[k])
    }
    // Least significant digit first: four passes of 13 bits over (high, low), moving positions only.
    let order = new Uint32Array(n)
    let spare = new Uint32Array(n)
    for (let k = 0; k < n; k++) order[k] = k
    const counts = new Uint32Array(1 << LOW)
    for (const [array, shift] of [[lo, 0], [lo, LOW], [hi, 0], [hi, LOW]] as const) {
      counts.fill(0)
      for (let k = 0; k < n; k++) counts[(array[order[k]] >>> shift) & LOW_MASK]++
      for (let d = 0, sum = 0; d < counts.length; d++) {
        const c = counts[d]
        counts[d] = sum
        sum += c
      }
      for (let k = 0; k < n; k++) {
        const i = order[k]
        spare[counts[(array[i] >>> shift) & LOW_MASK]++] = i
      }
      const t = order
      order = spare
      spare = t
    }
    const keys = new Float64Array(n)
    const items = new Uint32Array(n)
    const colours = new Uint16Array(n)
    for (let k = 0; k < n; k++) {
      const i = order[k]
      keys[k] = hi[i] * HALF + lo[i]
      items[k] = points.items[i]
      colours[k] = points.colours[i]
    }
    return new PointGrid(keys, items, colours, palette)
  }

  static fromParts (p: PointGridParts): PointGrid {
    return new PointGrid(p.keys, p.items, p.colours, p.palette)
  }

  toParts (): PointGridParts {
    return { keys: this.keys, items: this.items, colours: this.colours, palette: this.palette }
  }

  /** The buffers of its parts (for a postMessage's transfer list). */
  static buffers (p: PointGridParts): ArrayBuffer[] {
    return [p.keys.buffer as ArrayBuffer, p.items.buffer as ArrayBuffer, p.colours.buffer as ArrayBuffer]
  }

  /** The grid of the points whose item `keep` accepts (already in order: no sort). */
  subset (keep: (item: number) => boolean): PointGrid {
    let n = 0
    for (let k = 0; k < this.size; k++) if (keep(this.items[k])) n++
    const keys = new Float64Array(n)
    const items = new Uint32Array(n)
    const colours = new Uint16Array(n)
    for (let k = 0, at = 0; k < this.size; k++) {
      if (!keep(this.items[k])) continue
      keys[at] = this.keys[k]
      items[at] = this.items[k]
      colours[at++] = this.colours[k]
    }
    return new PointGrid(keys, items, colours, this.palette)
  }

  /** Memory held, in bytes. */
  get memoryBytes (): number {
    return this.keys.byteLength + this.items.byteLength + this.colours.byteLength + this.sumX.byteLength + this.sumY.byteLength +
      this.histStart.byteLength + this.histColour.byteLength + this.histCount.byteLength
  }

  // The first position in [from, to) whose key is >= key.
  private lowerBound (key: number, from: number, to: number): number {
    let a = from
    let b = to
    while (a < b) {
      const m = (a + b) >>> 1
      if (this.keys[m] < key) a = m + 1
      else b = m
    }
    return a
  }

  private count (c: number): void {
    if (this.tally[c]++ === 0) this.touched.push(c)
  }

  /**
   * The non-empty cells of tile z/x/y's 16 × 16 grid (z at most 22), in key order: each with its
   * points' count, mean position and most common colour.
   */
  cells (z: number, tx: number, ty: number): GridCell[] {
    const tileSpan = 4 ** (GRID_LEVEL - z)
    const first = mortonKey(tx * 2 ** (GRID_LEVEL - z), ty * 2 ** (GRID_LEVEL - z))
    const start = this.lowerBound(first, 0, this.size)
    const end = this.lowerBound(first + tileSpan, start, this.size)
    const cellSpan = tileSpan / (1 << (2 * GRID_BITS))
    const out: GridCell[] = []
    for (let a = start; a < end;) {
      const cell = Math.floor(this.keys[a] / cellSpan) * cellSpan
      const b = this.lowerBound(cell + cellSpan, a + 1, end)
      const n = b - a
      const [sx, sy] = this.sums(a, b)
      out.push({
        count: n,
        x: tileUnits(sx, n, z, tx),
        y: tileUnits(sy, n, z, ty),
        color: colourOf(this.palette, this.majority(a, b)),
        item: this.items[a]
      })
      a = b
    }
    return out
  }

  // The sums of positions (grid units, whole numbers: exact) of the points in [a, b).
  private sums (a: number, b: number): [number, number] {
    let sx = 0
    let sy = 0
    let k = a
    const direct = (to: number) => {
      for (; k < to; k++) {
        sx += decodeX(this.keys[k]) + 0.5
        sy += decodeY(this.keys[k]) + 0.5
      }
    }
    direct(Math.min(b, Math.ceil(a / BLOCK) * BLOCK))
    for (; k + BLOCK <= b; k += BLOCK) {
      const block = k / BLOCK
      sx += this.sumX[block] + BLOCK / 2
      sy += this.sumY[block] + BLOCK / 2
    }
    direct(b)
    return [sx, sy]
  }

  // The colour number most points in [a, b) have.
  private majority (a: number, b: number): number {
    let k = a
    const direct = (to: number) => {
      for (; k < to; k++) this.count(this.colours[k])
    }
    direct(Math.min(b, Math.ceil(a / BLOCK) * BLOCK))
    for (; k + BLOCK <= b; k += BLOCK) {
      const block = k / BLOCK
      for (let h = this.histStart[block]; h < this.histStart[block + 1]; h++) {
        const c = this.histColour[h]
        if (this.tally[c] === 0) this.touched.push(c)
        this.tally[c] += this.histCount[h]
      }
    }
    direct(b)
    let best = 0
    let most = -1
    for (const c of this.touched) {
      const n = this.tally[c]
      // A tie goes to the colour first in code point order, whatever the numbering.
      if (n > most || (n === most && this.palette[c] < this.palette[best])) {
        best = c
        most = n
      }
      this.tally[c] = 0
    }
    this.touched.length = 0
    return best
  }
}

const colourOf = (palette: string[], c: number): string | null => (c === 0 ? null : palette[c] ?? null)

/** Colours numbered for a grid: 0 is none, the rest in order of first use (at most 65,535; past that a colour counts as none). */
export class Palette {
  readonly colours: string[] = ['']
  private readonly numbers = new Map<string, number>()

  number (color: string | null | undefined): number {
    if (color === null || color === undefined) return 0
    let n = this.numbers.get(color)
    if (n !== undefined) return n
    if (this.colours.length > 0xffff) return 0
    n = this.colours.length
    this.colours.push(color)
    this.numbers.set(color, n)
    return n
  }
}
