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
/** GRID_CELLS as a power of two. */
export const GRID_BITS = 4
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

/**
 * How far a cluster is drawn from its cell's centre, at most, as a fraction of the cell (a cell is 256 tile
 * units, 32 px on a 512 px tile): the mean of its points, held to the middle quarter of the cell. The
 * mean alone may lie anywhere in the cell, so that two neighbours' means could touch; held, they stay
 * three quarters of a cell (24 px) apart, and circles of up to 12 px radius never cover each other.
 */
export const CLUSTER_DRIFT = 1 / 8

/**
 * Where a cell's cluster is drawn, in tile units of tile t at zoom z (0..4096): the mean of its `n`
 * positions summing to `sum` (grid units), at most CLUSTER_DRIFT of a cell from the centre of the cell
 * holding it (the mean of points in one cell is in that cell).
 */
export function tileUnits (sum: number, n: number, z: number, t: number): number {
  const cell = 2 ** (GRID_LEVEL - z - GRID_BITS)
  const mean = sum / n
  const centre = (Math.floor(mean / cell) + 0.5) * cell
  const held = Math.min(centre + CLUSTER_DRIFT * cell, Math.max(centre - CLUSTER_DRIFT * cell, mean))
  return Math.min(4096, Math.max(0, Math.round(held * (4096 / 2 ** (GRID_LEVEL - z)) - t * 4096)))
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

/** A PointGrid as plain arrays (BoxIndex.toParts). */
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
    return PointGrid.merged([this], z, tx, ty)
  }

  /**
   * The non-empty cells of tile z/x/y's grid over several grids numbered by one palette, in key order:
   * per cell the points the grids hold in it, their mean position and the colour most of them share.
   */
  static merged (grids: readonly PointGrid[], z: number, tx: number, ty: number): GridCell[] {
    const tileSpan = 4 ** (GRID_LEVEL - z)
    const first = mortonKey(tx * 2 ** (GRID_LEVEL - z), ty * 2 ** (GRID_LEVEL - z))
    const cellSpan = tileSpan / (1 << (2 * GRID_BITS))
    // Per cell of the tile (its rank in key order), the runs of the grids' points in it.
    let runs: Run[][] | null = null
    let only: Run[] = []
    for (let g = 0; g < grids.length; g++) {
      const grid = grids[g]
      if (grid.size === 0) continue
      const start = grid.lowerBound(first, 0, grid.size)
      const end = grid.lowerBound(first + tileSpan, start, grid.size)
      if (start === end) continue
      const found: Run[] = []
      for (let a = start; a < end;) {
        const cell = Math.floor(grid.keys[a] / cellSpan) * cellSpan
        const b = grid.lowerBound(cell + cellSpan, a + 1, end)
        found.push({ grid, a, b, rank: (cell - first) / cellSpan })
        a = b
      }
      // One grid with points in the tile (the usual case): its runs are the cells.
      if (runs === null && only.length === 0) {
        only = found
        continue
      }
      if (runs === null) {
        runs = []
        for (const r of only) (runs[r.rank] ??= []).push(r)
      }
      for (const r of found) (runs[r.rank] ??= []).push(r)
    }
    const out: GridCell[] = []
    if (runs === null) {
      for (const r of only) out.push(PointGrid.cellOf([r], z, tx, ty))
    } else {
      for (const cell of runs) if (cell !== undefined) out.push(PointGrid.cellOf(cell, z, tx, ty))
    }
    return out
  }

  // One cell from the runs of points in it (one per grid).
  private static cellOf (runs: Run[], z: number, tx: number, ty: number): GridCell {
    let n = 0
    let sx = 0
    let sy = 0
    const counter = runs[0].grid
    for (const r of runs) {
      n += r.b - r.a
      const [x, y] = r.grid.sums(r.a, r.b)
      sx += x
      sy += y
      r.grid.tallyInto(counter, r.a, r.b)
    }
    return {
      count: n,
      x: tileUnits(sx, n, z, tx),
      y: tileUnits(sy, n, z, ty),
      color: colourOf(counter.palette, counter.majority()),
      item: runs[0].grid.items[runs[0].a]
    }
  }

  // The sums of positions (grid units, whole numbers: exact) of the points in [a, b): point by point up
  // to the first block boundary and after the last, the blocks' sums between.
  private sums (a: number, b: number): [number, number] {
    let sx = 0
    let sy = 0
    const keys = this.keys
    const head = Math.min(b, Math.ceil(a / BLOCK) * BLOCK)
    let k = a
    for (; k < head; k++) {
      sx += decodeX(keys[k]) + 0.5
      sy += decodeY(keys[k]) + 0.5
    }
    for (; k + BLOCK <= b; k += BLOCK) {
      const block = k / BLOCK
      sx += this.sumX[block] + BLOCK / 2
      sy += this.sumY[block] + BLOCK / 2
    }
    for (; k < b; k++) {
      sx += decodeX(keys[k]) + 0.5
      sy += decodeY(keys[k]) + 0.5
    }
    return [sx, sy]
  }

  // Adds the colours of the points in [a, b) to the counts kept by `counter` (a grid of the same palette).
  private tallyInto (counter: PointGrid, a: number, b: number): void {
    const colours = this.colours
    const head = Math.min(b, Math.ceil(a / BLOCK) * BLOCK)
    let k = a
    for (; k < head; k++) counter.count(colours[k])
    for (; k + BLOCK <= b; k += BLOCK) {
      const block = k / BLOCK
      for (let h = this.histStart[block]; h < this.histStart[block + 1]; h++) {
        const c = this.histColour[h]
        if (counter.tally[c] === 0) counter.touched.push(c)
        counter.tally[c] += this.histCount[h]
      }
    }
    for (; k < b; k++) counter.count(colours[k])
  }

  // The colour number counted most since the last call (then the counts start again).
  private majority (): number {
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

// Of one grid, the points in [a, b) (positions in its order), all in one cell of a tile: rank is the
// cell's place among the tile's 256 in key order.
interface Run { grid: PointGrid; a: number; b: number; rank: number }

/** The levels of shapes: a line or polygon of level L spans less than a grid cell at zooms 0 to L (see shapeLevel). */
export const SHAPE_LEVELS = GRID_LEVEL - GRID_BITS + 1

/**
 * The last zoom at which a line or polygon whose bounds span `span` cells of GRID_LEVEL (the larger
 * of its width and height, whole cells) is smaller than a cell of a tile's 16 × 16 grid: a cell at zoom
 * z spans 2^(22 − z) of them, so it is the last z with span < 2^(22 − z). -1: at no zoom.
 */
export function shapeLevel (span: number): number {
  return GRID_LEVEL - GRID_BITS - (32 - Math.clz32(span))
}

/**
 * The bounds of a line or polygon on the grid: the cell of its centre (the middle of its longitudes
 * and of its latitudes, null beyond Web Mercator's latitudes) and its level (shapeLevel of the larger
 * of its width and height in cells, its latitudes held within Web Mercator's).
 */
export function shapeOnGrid (minLon: number, minLat: number, maxLon: number, maxLat: number): { cell: [number, number] | null; level: number } {
  const lat = (v: number) => Math.max(-MAX_MERCATOR_LAT, Math.min(MAX_MERCATOR_LAT, v))
  const nw = gridCell(minLon, lat(maxLat))
  const se = gridCell(maxLon, lat(minLat))
  const cell = gridCell((minLon + maxLon) / 2, (minLat + maxLat) / 2)
  if (nw === null || se === null || cell === null) return { cell: null, level: -1 }
  return { cell, level: shapeLevel(Math.max(se[0] - nw[0], se[1] - nw[1])) }
}

/** ClusterGrids as plain arrays (BoxIndex.toParts). */
export interface ClusterGridsParts {
  points: PointGridParts
  shapes: PointGridParts[]
}

/**
 * The grids of a tile's clusters: the Point placemarks', and per level L those of the lines and
 * polygons of that level, each at the cell of its centre. At zoom z a tile has the cells of its points
 * and, apart, the cells of its shapes of levels z and above (smaller than a cell there: drawn, they
 * would be a few pixels); a larger shape is drawn as itself.
 */
export class ClusterGrids {
  readonly points: PointGrid
  /** shapes[L]: the shapes of level L (0 to SHAPE_LEVELS − 1). */
  readonly shapes: PointGrid[]

  constructor (points: PointGrid, shapes: PointGrid[]) {
    this.points = points
    this.shapes = shapes
  }

  /** The non-empty cells of tile z/x/y's 16 × 16 grid (z at most 22), in key order: of its points, and of its shapes smaller than a cell. */
  cells (z: number, tx: number, ty: number): { points: GridCell[]; shapes: GridCell[] } {
    return { points: this.points.cells(z, tx, ty), shapes: PointGrid.merged(this.shapes.slice(Math.max(0, z)), z, tx, ty) }
  }

  /** The grids of the points and shapes whose item `keep` accepts. */
  subset (keep: (item: number) => boolean): ClusterGrids {
    return new ClusterGrids(this.points.subset(keep), this.shapes.map((g) => (g.size === 0 ? g : g.subset(keep))))
  }

  get memoryBytes (): number {
    let bytes = this.points.memoryBytes
    for (const g of this.shapes) bytes += g.memoryBytes
    return bytes
  }

  toParts (): ClusterGridsParts {
    return { points: this.points.toParts(), shapes: this.shapes.map((g) => g.toParts()) }
  }

  static fromParts (p: ClusterGridsParts): ClusterGrids {
    return new ClusterGrids(PointGrid.fromParts(p.points), p.shapes.map((s) => PointGrid.fromParts(s)))
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
