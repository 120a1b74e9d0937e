import { SaxesParser, type SaxesTagPlain } from 'saxes'
import { DecodeError, KmlDecoder, type DecodeReport } from './decode.ts'

export type Position = [number, number]
export type KmlGeometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'Polygon'; coordinates: Position[][] }

export interface KmlPlacemark {
  name: string
  description: string | null
  styleId: string | null
  folderPath: string[]
  geometry: KmlGeometry
  coordinatesRaw: string
  mediaLinks: string[]
  extendedData: { key: string; value: string }[]
  // The texts of <TimeStamp><when> and <TimeSpan><begin>/<end>, when present (lib/kml/time.ts reads them).
  time?: { when?: string; begin?: string; end?: string }
}
// A placemark's own time elements (gx:TimeStamp and gx:TimeSpan have the same local names).
const TIME_PATHS = new Set(['TimeStamp/when', 'TimeSpan/begin', 'TimeSpan/end'])

export interface KmlStyle { id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }
export interface KmlFolder { name: string; path: string[] }
export type KmlItem =
  | { kind: 'placemark'; placemark: KmlPlacemark }
  | { kind: 'style'; style: KmlStyle }
  | { kind: 'folder'; folder: KmlFolder }
  | { kind: 'skipped'; reason: string; name: string; line: number }

export class KmlError extends Error {
  override name = 'KmlError'
  line?: number
  column?: number
  constructor (message: string, line?: number, column?: number) {
    super(message)
    this.line = line
    this.column = column
  }
}

const MiB = 1024 * 1024

/**
 * Limits on what one file may ask of the reader; past one the file is refused with a KmlError naming
 * the line. Text is measured in characters (UTF-16 code units), which for coordinates are bytes.
 */
export interface KmlLimits {
  // Elements open at once, the root included.
  maxElementDepth: number
  // Folder and Document elements open at once.
  maxFolderDepth: number
  // All the coordinates text of one placemark (every ring of a polygon together).
  maxCoordinatesChars: number
  // Positions in one placemark's geometry.
  maxPoints: number
  // One text value: a name, description, styleUrl, ExtendedData value or style property.
  maxTextChars: number
  // One folder name, and one shared style's id: both are index keys in the database (a folder name in the
  // placemarks' folder_path index, a style id in the styles' primary key), and an index row holds at most
  // 2,704 bytes; 800 characters are at most 2,400 bytes of UTF-8 whatever the characters.
  maxFolderNameChars: number
  maxStyleIdChars: number
  // The names of a folder and of the folders around it, together: the folder path every placemark inside
  // it stores (and answers) once more.
  maxFolderPathChars: number
  // All the text one placemark holds.
  maxPlacemarkChars: number
  // All the text one shared style holds.
  maxStyleChars: number
  // One run of text and comments between two tags, or one tag (what the XML parser buffers before handing it on).
  maxTokenChars: number
}

export const KML_LIMITS: Readonly<KmlLimits> = Object.freeze({
  maxElementDepth: 256,
  maxFolderDepth: 64,
  maxCoordinatesChars: 16 * MiB,
  maxPoints: 1_000_000,
  maxTextChars: 1 * MiB,
  maxFolderNameChars: 800,
  maxStyleIdChars: 800,
  maxFolderPathChars: 2048,
  maxPlacemarkChars: 32 * MiB,
  maxStyleChars: 1 * MiB,
  maxTokenChars: 16 * MiB
})

export interface KmlReadOptions {
  limits?: Partial<KmlLimits>
  // Filled in while reading: the encoding and the invalid byte sequences met (replaced by U+FFFD).
  report?: DecodeReport
}

export type { DecodeReport }

const size = (chars: number) => (chars % MiB === 0 ? `${chars} characters (${chars / MiB} MiB)` : `${chars} characters`)

// gx:Track and gx:MultiTrack share the reason 'Track' so reports group them together. A Map: an element
// named `constructor` or `toString` is no geometry.
const UNSUPPORTED_GEOMETRY = new Map([
  ['MultiGeometry', 'MultiGeometry'],
  ['Model', 'Model'],
  ['Track', 'Track'],
  ['MultiTrack', 'Track'],
  ['LinearRing', 'LinearRing']
])
// Features other than Placemark carry no geometry we import, but are reported rather than dropped.
const OTHER_FEATURES = new Set(['GroundOverlay', 'ScreenOverlay', 'PhotoOverlay', 'NetworkLink'])
// Shared styles live at Document (or, leniently, Folder) level; elsewhere a Style is inline to a feature.
const STYLE_PARENTS = new Set(['Document', 'Folder', 'kml'])

// Large string chunks are fed in slices so the item queue stays small.
const SLICE = 65536
const SPACED_COMMA = /\s,|,\s/
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

interface Frame {
  qname: string
  local: string
  capture: boolean
  text: string
  hasChild: boolean
  // Most characters the captured text may reach.
  limit: number
  // A Folder or Document, counted against maxFolderDepth.
  container: boolean
}

interface FolderState { name: string; line: number }

interface PlacemarkState {
  depth: number
  line: number
  name: string
  description: string | null
  styleId: string | null
  geometry: string | null
  geometryDepth: number
  geometryOpen: boolean
  coordinates: string[]
  // Coordinates text held so far, and all text held so far.
  coordinateChars: number
  held: number
  outer: string | null
  outerOpen: boolean
  inner: string[]
  innerOpen: boolean
  mediaLinks: string[]
  extendedData: { key: string; value: string }[]
  dataName: string | null
  dataValue: string
  time: { when?: string; begin?: string; end?: string } | undefined
}

interface StyleState {
  depth: number
  id: string
  kind: 'Style' | 'StyleMap'
  definition: Record<string, string>
  pairDepth: number
  pairLeaves: [string, string][]
  pairKey: string
  pairCount: number
  line: number
  held: number
}

interface FeatureState { depth: number; kind: string; line: number; name: string }

function localName (qname: string): string {
  const colon = qname.indexOf(':')
  return colon < 0 ? qname : qname.slice(colon + 1)
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

function collapse (text: string): string {
  // Text already collapsed between its ends (printable ASCII, single spaces between words) needs only
  // its ASCII whitespace ends cut.
  let start = 0
  let end = text.length
  while (start < end && isSpace(text.charCodeAt(start))) start++
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--
  let previous = 0
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i)
    if ((c > 0x20 && c < 0x7f) || (c === 0x20 && previous !== 0x20)) previous = c
    else return text.replace(/\s+/g, ' ').trim()
  }
  return start === 0 && end === text.length ? text : text.slice(start, end)
}

const TUPLE = /\S+/g

// Positions, null when a tuple is invalid, or the number of positions when there are more than maxPoints.
function parsePositions (text: string, maxPoints: number): Position[] | null | number {
  return scanPositions(text, maxPoints) ?? parsePositionsByPattern(text, maxPoints)
}

// The general reading, for every text scanPositions leaves alone.
function parsePositionsByPattern (text: string, maxPoints: number): Position[] | null | number {
  // Some writers put spaces after the commas; rejoin those before splitting tuples on whitespace.
  const joined = SPACED_COMMA.test(text) ? text.replace(/\s*,\s*/g, ',') : text
  const out: Position[] = []
  TUPLE.lastIndex = 0
  for (let m = TUPLE.exec(joined); m !== null; m = TUPLE.exec(joined)) {
    if (out.length === maxPoints) return maxPoints + 1
    const parts = m[0].split(',')
    if (parts.length < 2 || parts.length > 3 || !parts.every((p) => NUMBER.test(p))) return null
    const lon = Number(parts[0])
    const lat = Number(parts[1])
    if (!Number.isFinite(lon) || !Number.isFinite(lat) || (parts.length === 3 && !Number.isFinite(Number(parts[2])))) return null
    if (lon < -180 || lon > 180 || lat < -90 || lat > 90) return null
    out.push([lon, lat])
  }
  return out
}

const COMMA = 0x2c
// Powers of ten a double holds exactly.
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`))
// Where the number scanNumber read ends.
let numberEnd = 0

/**
 * The number at text[i] in the form NUMBER accepts without an exponent, NaN when there is none. With at
 * most 2^53 as its digits and 22 after the point, digits / 10^k is one correctly rounded division,
 * the very double Number() gives; longer ones are read by Number() itself.
 */
function scanNumber (text: string, i: number, n: number): number {
  const start = i
  let c = i < n ? text.charCodeAt(i) : 0
  let negative = false
  if (c === 0x2d || c === 0x2b) {
    negative = c === 0x2d
    c = ++i < n ? text.charCodeAt(i) : 0
  }
  let digits = 0
  let mantissa = 0
  for (; c >= 0x30 && c <= 0x39; c = ++i < n ? text.charCodeAt(i) : 0) {
    mantissa = mantissa * 10 + (c - 0x30)
    digits++
  }
  let fraction = 0
  if (c === 0x2e) {
    for (c = ++i < n ? text.charCodeAt(i) : 0; c >= 0x30 && c <= 0x39; c = ++i < n ? text.charCodeAt(i) : 0) {
      mantissa = mantissa * 10 + (c - 0x30)
      fraction++
    }
  }
  if (digits + fraction === 0 || c === 0x65 || c === 0x45) return NaN
  numberEnd = i
  if (mantissa <= Number.MAX_SAFE_INTEGER && fraction <= 22) {
    const value = fraction === 0 ? mantissa : mantissa / POW10[fraction]
    return negative ? -value : value
  }
  return Number(text.slice(start, i))
}

/**
 * The positions of plain coordinates text, as parsePositionsByPattern reads them: tuples of two or
 * three numbers without exponents, split by commas with no space around them, between runs of ASCII
 * whitespace, all in range, at most maxPoints. Anything else (an invalid tuple included) gives
 * undefined, for parsePositionsByPattern to read or refuse.
 */
function scanPositions (text: string, maxPoints: number): Position[] | undefined {
  const out: Position[] = []
  const n = text.length
  let i = 0
  for (;;) {
    while (i < n && isSpace(text.charCodeAt(i))) i++
    if (i === n) return out
    // Past maxPoints, the general reading decides (a space before a comma later on joins tuples there).
    if (out.length === maxPoints) return undefined
    const lon = scanNumber(text, i, n)
    if (!(lon >= -180 && lon <= 180) || numberEnd === n || text.charCodeAt(numberEnd) !== COMMA) return undefined
    const lat = scanNumber(text, numberEnd + 1, n)
    if (!(lat >= -90 && lat <= 90)) return undefined
    i = numberEnd
    if (i < n && text.charCodeAt(i) === COMMA) {
      const z = scanNumber(text, i + 1, n)
      if (!Number.isFinite(z)) return undefined
      i = numberEnd
    }
    if (i < n && !isSpace(text.charCodeAt(i))) return undefined
    out.push([lon, lat])
  }
}

function tooManyPoints (p: PlacemarkState, maxPoints: number): KmlError {
  return new KmlError(`placemark at line ${p.line}: more than ${maxPoints} coordinate positions`, p.line)
}

function buildGeometry (p: PlacemarkState, maxPoints: number): { geometry: KmlGeometry; raw: string } | string {
  if (p.geometry === null) return 'no geometry'
  const point = p.geometry === 'Point'
  const unsupported = point || p.geometry === 'LineString' ? undefined : UNSUPPORTED_GEOMETRY.get(p.geometry)
  if (unsupported) return unsupported
  if (p.geometry === 'Polygon') {
    if (p.outer === null) return 'invalid coordinates'
    const rings: Position[][] = []
    let left = maxPoints
    for (const text of [p.outer, ...p.inner]) {
      const ring = parsePositions(text, left)
      if (typeof ring === 'number') throw tooManyPoints(p, maxPoints)
      if (ring === null || ring.length < 4) return 'invalid coordinates'
      left -= ring.length
      rings.push(ring)
    }
    return { geometry: { type: 'Polygon', coordinates: rings }, raw: collapse(p.outer) }
  }
  const text = p.coordinates.length === 1 ? p.coordinates[0] : p.coordinates.join(' ')
  const positions = parsePositions(text, maxPoints)
  if (typeof positions === 'number') throw tooManyPoints(p, maxPoints)
  if (positions === null) return 'invalid coordinates'
  const raw = collapse(text)
  if (point) {
    return positions.length === 1 ? { geometry: { type: 'Point', coordinates: positions[0] }, raw } : 'invalid coordinates'
  }
  return positions.length >= 2 ? { geometry: { type: 'LineString', coordinates: positions }, raw } : 'invalid coordinates'
}

function friendly (message: string, lastClosed: string): string {
  const text = message.replace(/^\d+:\d+: /, '').replace(/\.$/, '')
  // saxes closes the still-open element before complaining about a mismatched closing tag.
  if (text === 'unexpected close tag') return `unclosed tag <${lastClosed}>`
  const unclosed = /^unclosed tag: (.+)$/.exec(text)
  if (unclosed) return `unclosed tag <${unclosed[1]}>`
  const unmatched = /^unmatched closing tag: (.+)$/.exec(text)
  if (unmatched) return `closing tag </${unmatched[1]}> matches no open element`
  return text
}

/**
 * Streams the placemarks, styles and folders of a KML document; holds at most one placemark's worth
 * of state, and refuses input past the limits (KML_LIMITS unless given) with a KmlError.
 */
export async function * readKml (chunks: AsyncIterable<string | Buffer>, options: KmlReadOptions = {}): AsyncGenerator<KmlItem> {
  for await (const batch of readKmlBatches(chunks, options)) yield * batch
}

/**
 * The same items in batches (those completed by each slice of input read): a consumer handling a
 * million placemarks saves a promise round trip per item.
 */
export async function * readKmlBatches (chunks: AsyncIterable<string | Buffer>, options: KmlReadOptions = {}): AsyncGenerator<KmlItem[]> {
  const limits: KmlLimits = { ...KML_LIMITS, ...options.limits }
  const parser = new SaxesParser({ xmlns: false, position: true })
  const decoder = new KmlDecoder(() => parser.line, options.report)
  const queue: KmlItem[] = []
  const stack: Frame[] = []
  const frames: Frame[] = []
  const maxTextChars = limits.maxTextChars
  const folders: FolderState[] = []
  // Folders before this index have been emitted; the ones from it on wait for their name.
  let unemitted = 0
  // The names of the open folders, shared by the placemarks of one folder until it changes.
  let currentPath: string[] | null = null
  // Open Folder and Document elements.
  let containers = 0
  let sawRoot = false
  let tagLine = 1
  let placemark: PlacemarkState | null = null
  let style: StyleState | null = null
  let feature: FeatureState | null = null
  let lastClosed = ''
  // Where the parser stood at its last tag or text event: what it read since, it still buffers.
  let lastEventAt = 0
  // Characters written to the parser. (Between writes saxes's \`position\` counts the last chunk twice:
  // it is exact only inside an event.)
  let written = 0

  const emitFolders = () => {
    for (; unemitted < folders.length; unemitted++) {
      const path = folders.slice(0, unemitted + 1).map((f) => f.name)
      queue.push({ kind: 'folder', folder: { name: folders[unemitted].name, path } })
    }
  }
  const folderPath = (): string[] => (currentPath ??= folders.map((f) => f.name))

  const tooLong = (frame: Frame): KmlError => {
    const line = parser.line
    if (placemark && frame.local === 'coordinates') {
      return new KmlError(`placemark at line ${placemark.line}: coordinates longer than ${size(limits.maxCoordinatesChars)} (at line ${line})`, line)
    }
    const folder = !placemark && !style && !feature && frame.local === 'name' ? folders[folders.length - 1] : undefined
    const owner = placemark ? `placemark at line ${placemark.line}: ` : style ? `style "${style.id}" at line ${style.line}: ` : folder ? `folder at line ${folder.line}: ` : ''
    return new KmlError(`${owner}<${frame.qname}> text longer than ${size(frame.limit)} (at line ${line})`, line)
  }
  const placemarkTooBig = (p: PlacemarkState) =>
    new KmlError(`placemark at line ${p.line} holds more than ${size(limits.maxPlacemarkChars)} of text (at line ${parser.line})`, parser.line)
  const styleTooBig = (s: StyleState) =>
    new KmlError(`style "${s.id}" at line ${s.line} holds more than ${size(limits.maxStyleChars)} of text (at line ${parser.line})`, parser.line)
  const tokenTooLong = () =>
    new KmlError(`text, comments or a tag running longer than ${size(limits.maxTokenChars)} without an element boundary (at line ${parser.line})`, parser.line)

  // Counts text towards the placemark's or the style's total.
  const hold = (chars: number) => {
    if (placemark) {
      placemark.held += chars
      if (placemark.held > limits.maxPlacemarkChars) throw placemarkTooBig(placemark)
    } else if (style) {
      style.held += chars
      if (style.held > limits.maxStyleChars) throw styleTooBig(style)
    }
  }

  const putDefinition = (key: string, value: string) => {
    if (!style) return
    let k = key
    // Repeated paths keep every value instead of the last one winning.
    for (let n = 2; k in style.definition; n++) k = `${key}[${n}]`
    hold(k.length + value.length)
    style.definition[k] = value
  }

  /**
   * Called after each slice written: the parser buffers text, comments and tags until the next tag
   * event, so a run past its limit is refused while it is still arriving rather than once whole.
   * (Handlers for comments and the like are left unset on purpose: each one set slows the parser.)
   */
  const checkPending = () => {
    const pending = written - lastEventAt
    const top = stack[stack.length - 1]
    if (top?.capture) {
      if (top.text.length + pending > top.limit) throw tooLong(top)
      if (placemark && placemark.held + pending > limits.maxPlacemarkChars) throw placemarkTooBig(placemark)
      if (style && style.held + pending > limits.maxStyleChars) throw styleTooBig(style)
    }
    if (pending > limits.maxTokenChars) throw tokenTooLong()
  }
  const mark = () => { lastEventAt = parser.position }

  parser.on('error', (err) => {
    throw new KmlError(`malformed XML at line ${parser.line}, column ${parser.column}: ${friendly(err.message, lastClosed)}`, parser.line, parser.column)
  })

  parser.on('opentagstart', () => {
    tagLine = parser.line
    mark()
  })

  parser.on('opentag', (tag: SaxesTagPlain) => {
    // A tag that began and ended within one write (checkPending sees only what is left over).
    if (parser.position - lastEventAt > limits.maxTokenChars) throw tokenTooLong()
    mark()
    const local = localName(tag.name)
    if (!sawRoot) {
      sawRoot = true
      if (local !== 'kml') throw new KmlError(`not a KML document: root element is <${tag.name}>`, tagLine, parser.column)
    }
    const depth = stack.length
    if (depth >= limits.maxElementDepth) {
      throw new KmlError(`elements nested deeper than ${limits.maxElementDepth} levels at line ${tagLine} (<${tag.name}>)`, tagLine)
    }
    const parent = depth > 0 ? stack[depth - 1] : null
    if (parent) parent.hasChild = true
    // Frames are reused depth by depth: one object per level, not one per element.
    let frame = frames[depth]
    if (frame === undefined) {
      frame = { qname: tag.name, local, capture: false, text: '', hasChild: false, limit: maxTextChars, container: false }
      frames[depth] = frame
    } else {
      frame.qname = tag.name
      frame.local = local
      frame.capture = false
      frame.hasChild = false
      frame.limit = maxTextChars
      frame.container = false
    }
    stack.push(frame)

    if (placemark) {
      const rel = depth - placemark.depth
      const p = placemark
      if (rel === 1) {
        if (local === 'name' || local === 'description' || local === 'styleUrl') frame.capture = true
        // (ExtendedData, in nearly every placemark, skips the lookup of a name that is not there.)
        else if (p.geometry === null && (local === 'Point' || local === 'LineString' || local === 'Polygon' || (local !== 'ExtendedData' && UNSUPPORTED_GEOMETRY.has(local)))) {
          p.geometry = local
          p.geometryDepth = depth
          p.geometryOpen = true
        }
        return
      }
      if (p.geometryOpen) {
        // The element's path below the geometry element, told by its depth and the names above it.
        const below = depth - p.geometryDepth
        if (p.geometry === 'Polygon') {
          if (below === 2 && local === 'LinearRing') {
            const boundary = stack[depth - 1].local
            if (boundary === 'outerBoundaryIs') {
              p.outerOpen = p.outer === null
              if (p.outerOpen) p.outer = ''
            } else if (boundary === 'innerBoundaryIs') {
              p.innerOpen = true
              p.inner.push('')
            }
          } else if (below === 3 && local === 'coordinates' && stack[depth - 1].local === 'LinearRing') {
            const boundary = stack[depth - 2].local
            if ((p.outerOpen && boundary === 'outerBoundaryIs') || (p.innerOpen && boundary === 'innerBoundaryIs')) frame.capture = true
          }
        } else if ((p.geometry === 'Point' || p.geometry === 'LineString') && below === 1 && local === 'coordinates') {
          frame.capture = true
        }
        if (frame.capture) frame.limit = limits.maxCoordinatesChars - p.coordinateChars
        return
      }
      // ExtendedData/Data, ExtendedData/Data/value, ExtendedData/SchemaData/SimpleData and TIME_PATHS.
      const first = stack[p.depth + 1].local
      if (rel === 2 && first === 'ExtendedData' && local === 'Data') {
        p.dataName = tag.attributes.name ?? ''
        p.dataValue = ''
      } else if (rel === 3
        ? first === 'ExtendedData' && ((local === 'value' && stack[depth - 1].local === 'Data') || (local === 'SimpleData' && stack[depth - 1].local === 'SchemaData'))
        : rel === 2 && TIME_PATHS.has(`${first}/${local}`)) {
        frame.capture = true
      }
      return
    }

    if (style) {
      frame.capture = true
      if (style.kind === 'StyleMap' && local === 'Pair' && depth === style.depth + 1) {
        style.pairDepth = depth
        style.pairLeaves = []
        style.pairKey = ''
        style.pairCount++
      }
      return
    }

    if (feature) {
      if (local === 'name' && depth === feature.depth + 1) frame.capture = true
      return
    }

    if (local === 'Placemark') {
      emitFolders()
      placemark = {
        depth,
        line: tagLine,
        name: '',
        description: null,
        styleId: null,
        geometry: null,
        geometryDepth: -1,
        geometryOpen: false,
        coordinates: [],
        coordinateChars: 0,
        held: 0,
        outer: null,
        outerOpen: false,
        inner: [],
        innerOpen: false,
        mediaLinks: [],
        extendedData: [],
        dataName: null,
        dataValue: '',
        time: undefined
      }
    } else if (local === 'Folder' || local === 'Document') {
      containers++
      frame.container = true
      if (containers > limits.maxFolderDepth) {
        throw new KmlError(`Folder/Document nesting deeper than ${limits.maxFolderDepth} levels at line ${tagLine}`, tagLine)
      }
      if (local === 'Folder') {
        emitFolders()
        folders.push({ name: '', line: tagLine })
        currentPath = null
      }
    } else if ((local === 'Style' || local === 'StyleMap') && parent && STYLE_PARENTS.has(parent.local)) {
      const id = tag.attributes.id ?? ''
      if (id.length > limits.maxStyleIdChars) {
        throw new KmlError(`<${tag.name}> at line ${tagLine}: id longer than ${size(limits.maxStyleIdChars)}`, tagLine)
      }
      if (id !== '') style = { depth, id, kind: local, definition: {}, pairDepth: -1, pairLeaves: [], pairKey: '', pairCount: 0, line: tagLine, held: 0 }
    } else if (OTHER_FEATURES.has(local)) {
      feature = { depth, kind: local, line: tagLine, name: '' }
    } else if (local === 'name' && parent?.local === 'Folder' && folders.length > 0) {
      frame.capture = true
      frame.limit = Math.min(limits.maxFolderNameChars, limits.maxTextChars)
    }
  })

  const onText = (text: string) => {
    if (text.length > limits.maxTokenChars) throw tokenTooLong()
    mark()
    const top = stack[stack.length - 1]
    if (!top?.capture) return
    if (top.text.length + text.length > top.limit) throw tooLong(top)
    hold(text.length)
    top.text += text
  }
  parser.on('text', onText)
  parser.on('cdata', onText)

  parser.on('closetag', (tag: SaxesTagPlain) => {
    mark()
    lastClosed = tag.name
    const frame = stack.pop()
    if (!frame) return
    const depth = stack.length
    const local = frame.local
    // The frame's text, let go of here since the frame stays for the next element at this depth.
    const text = frame.text
    frame.text = ''

    if (placemark) {
      const p = placemark
      if (depth === p.depth) {
        placemark = null
        const built = buildGeometry(p, limits.maxPoints)
        if (typeof built === 'string') {
          queue.push({ kind: 'skipped', reason: built, name: p.name, line: p.line })
        } else {
          const done: KmlPlacemark = {
            name: p.name,
            description: p.description,
            styleId: p.styleId,
            folderPath: folderPath(),
            geometry: built.geometry,
            coordinatesRaw: built.raw,
            mediaLinks: p.mediaLinks,
            extendedData: p.extendedData
          }
          if (p.time) done.time = p.time
          queue.push({ kind: 'placemark', placemark: done })
        }
        return
      }
      const rel = depth - p.depth
      if (rel === 1 && frame.capture) {
        if (local === 'name') p.name = text.trim()
        else if (local === 'description') p.description = text.trim() || null
        else if (local === 'styleUrl') {
          const url = text.trim()
          p.styleId = (url.charCodeAt(0) === 0x23 ? url.slice(1) : url) || null
        }
        return
      }
      if (p.geometryOpen) {
        if (depth === p.geometryDepth) p.geometryOpen = false
        else if (frame.capture) {
          p.coordinateChars += text.length
          if (p.geometry === 'Polygon') {
            if (p.outerOpen) p.outer += ` ${text}`
            else p.inner[p.inner.length - 1] += ` ${text}`
          } else {
            p.coordinates.push(text)
          }
        } else if (local === 'LinearRing') {
          p.outerOpen = false
          p.innerOpen = false
        }
        return
      }
      if (frame.capture && depth === p.depth + 2 && (local === 'when' || local === 'begin' || local === 'end')) {
        (p.time ??= {})[local] = text.trim()
      } else if (local === 'value' && frame.capture) {
        p.dataValue = text.trim()
      } else if (local === 'SimpleData' && frame.capture) {
        const key = tag.attributes.name ?? ''
        // Each entry costs a little beyond its text, so that empty ones cannot pile up for free.
        hold(key.length + 32)
        p.extendedData.push({ key, value: text.trim() })
      } else if (local === 'Data' && p.dataName !== null && depth === p.depth + 2) {
        hold(p.dataName.length + 32)
        if (p.dataName === 'gx_media_links') p.mediaLinks.push(...p.dataValue.split(/\s+/).filter((s) => s !== ''))
        else p.extendedData.push({ key: p.dataName, value: p.dataValue })
        p.dataName = null
      }
      return
    }

    if (style) {
      const s = style
      if (depth === s.depth) {
        style = null
        queue.push({ kind: 'style', style: { id: s.id, kind: s.kind, definition: s.definition } })
        return
      }
      const path = stack.slice(s.depth + 1).map((f) => f.local).concat(local)
      if (s.pairDepth >= 0) {
        if (depth === s.pairDepth) {
          const key = s.pairKey || String(s.pairCount)
          for (const [rel, value] of s.pairLeaves) putDefinition(rel === 'styleUrl' ? `Pair.${key}` : `Pair.${key}.${rel}`, value)
          s.pairDepth = -1
          return
        }
        if (!frame.hasChild) {
          const rel = path.slice(1).join('.')
          if (rel === 'key') s.pairKey = text.trim()
          else s.pairLeaves.push([rel, text.trim()])
        }
        return
      }
      const attributes = Object.entries(tag.attributes)
      for (const [name, value] of attributes) putDefinition(`${path.join('.')}@${name}`, value)
      const trimmed = text.trim()
      if (!frame.hasChild && (trimmed !== '' || attributes.length === 0)) putDefinition(path.join('.'), trimmed)
      return
    }

    if (feature) {
      if (depth === feature.depth) {
        queue.push({ kind: 'skipped', reason: feature.kind, name: feature.name, line: feature.line })
        feature = null
      } else if (frame.capture) {
        feature.name = text.trim()
      }
      return
    }

    if (frame.container) containers--
    if (local === 'Folder' && folders.length > 0) {
      emitFolders()
      folders.pop()
      unemitted = folders.length
      currentPath = null
    } else if (frame.capture && local === 'name' && folders.length > 0) {
      const folder = folders[folders.length - 1]
      folder.name = text.trim()
      currentPath = null
      let pathChars = 0
      for (const f of folders) pathChars += f.name.length
      if (pathChars > limits.maxFolderPathChars) {
        throw new KmlError(`folder at line ${folder.line}: its folder path (its name and those of the ${folders.length - 1} folders around it) is longer than ${size(limits.maxFolderPathChars)} (at line ${parser.line})`, parser.line)
      }
    }
  })

  // Yields after every slice so a single huge chunk never piles up more than a slice's worth of items.
  function * feed (text: string): Generator<KmlItem[]> {
    for (let start = 0; start < text.length;) {
      let end = Math.min(start + SLICE, text.length)
      // Never split a surrogate pair between two writes.
      if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1])) end++
      parser.write(text.slice(start, end))
      written += end - start
      checkPending()
      start = end
      if (queue.length > 0) yield queue.splice(0)
    }
  }

  const decode = (decoded: () => string): string => {
    try {
      return decoded()
    } catch (err) {
      if (err instanceof DecodeError) throw new KmlError(err.message)
      throw err
    }
  }

  for await (const chunk of chunks) {
    yield * feed(typeof chunk === 'string' ? chunk : decode(() => decoder.write(chunk)))
  }
  yield * feed(decode(() => decoder.end()))
  if (!sawRoot) throw new KmlError('not a KML document: no root element', parser.line, parser.column)
  if (stack.length > 0) {
    const open = stack[stack.length - 1].qname
    throw new KmlError(`malformed XML at line ${parser.line}, column ${parser.column}: unexpected end of input, unclosed tag <${open}>`, parser.line, parser.column)
  }
  parser.close()
  if (queue.length > 0) yield queue.splice(0)
}
