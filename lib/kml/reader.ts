import { SaxesParser, type SaxesTag } from 'saxes'

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
}
export interface KmlStyle { id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }
export interface KmlFolder { name: string; path: string[] }
export type KmlItem =
  | { kind: 'placemark'; placemark: KmlPlacemark }
  | { kind: 'style'; style: KmlStyle }
  | { kind: 'folder'; folder: KmlFolder }
  | { kind: 'skipped'; reason: string; name: string; line: number }

export class KmlError extends Error {
  override name = 'KmlError'
  constructor(message: string, readonly line?: number, readonly column?: number) {
    super(message)
  }
}

const localName = (qname: string) => qname.slice(qname.indexOf(':') + 1)

const UNSUPPORTED: Record<string, string> = { MultiGeometry: 'MultiGeometry', Model: 'Model', Track: 'Track', MultiTrack: 'Track' }
const SUPPORTED = new Set(['Point', 'LineString', 'Polygon'])

interface FolderState { name: string; emitted: boolean }

interface PlacemarkState {
  line: number
  depth: number
  name: string
  description: string | null
  styleId: string | null
  geometryType: string | null
  skipReason: string | null
  outer: string | null
  inner: string[]
  coordinates: string | null
  mediaLinks: string[]
  extendedData: { key: string; value: string }[]
  dataName: string | null
  dataValue: string
}

interface StyleState { id: string; kind: 'Style' | 'StyleMap'; depth: number; definition: Record<string, string>; pairKey: string; pairUrl: string }

export function parseCoordinates(text: string): Position[] | null {
  const tuples = text.replace(/\s*,\s*/g, ',').trim().split(/\s+/).filter(Boolean)
  const out: Position[] = []
  for (const tuple of tuples) {
    const parts = tuple.split(',')
    if (parts.length < 2 || parts.length > 3) return null
    const lon = Number(parts[0])
    const lat = Number(parts[1])
    if (!Number.isFinite(lon) || !Number.isFinite(lat) || lon < -180 || lon > 180 || lat < -90 || lat > 90) return null
    out.push([lon, lat])
  }
  return out
}

function attribute(tag: SaxesTag, key: string): string | undefined {
  const v: unknown = tag.attributes[key]
  return typeof v === 'string' ? v : undefined
}

const collapse = (s: string) => s.replace(/\s+/g, ' ').trim()

function buildGeometry(p: PlacemarkState): KmlGeometry | string {
  if (p.skipReason) return p.skipReason
  if (!p.geometryType) return 'no geometry'
  if (p.geometryType === 'Point') {
    const c = parseCoordinates(p.coordinates ?? '')
    return c && c.length === 1 ? { type: 'Point', coordinates: c[0] } : 'invalid coordinates'
  }
  if (p.geometryType === 'LineString') {
    const c = parseCoordinates(p.coordinates ?? '')
    return c && c.length >= 2 ? { type: 'LineString', coordinates: c } : 'invalid coordinates'
  }
  const rings = [p.outer, ...p.inner].map((r) => (r === null ? null : parseCoordinates(r)))
  if (rings.some((r) => !r || r.length < 4)) return 'invalid coordinates'
  return { type: 'Polygon', coordinates: rings as Position[][] }
}

/** Streams KmlItems out of KML text chunks; memory holds one placemark at a time, never the file. */
export async function* readKml(chunks: AsyncIterable<string | Buffer> | Iterable<string | Buffer>): AsyncGenerator<KmlItem> {
  const parser = new SaxesParser({ position: true })
  const decoder = new TextDecoder('utf-8')
  const queue: KmlItem[] = []
  const stack: string[] = []
  const folders: FolderState[] = []
  let text = ''
  let sawRoot = false
  let placemark: PlacemarkState | null = null
  let style: StyleState | null = null

  const emitFolders = () => {
    for (let i = 0; i < folders.length; i++) {
      if (!folders[i].emitted) {
        folders[i].emitted = true
        queue.push({ kind: 'folder', folder: { name: folders[i].name, path: folders.slice(0, i + 1).map((f) => f.name) } })
      }
    }
  }

  parser.on('opentag', (tag: SaxesTag) => {
    const name = localName(tag.name)
    if (!sawRoot) {
      sawRoot = true
      if (name !== 'kml') throw new KmlError(`not a KML document: root element is <${tag.name}>`, parser.line, parser.column)
    }
    stack.push(name)
    text = ''

    if (placemark) {
      if (style) return
      const rel = stack.length - placemark.depth
      if (rel === 1 && !placemark.geometryType && !placemark.skipReason) {
        if (SUPPORTED.has(name)) placemark.geometryType = name
        else if (UNSUPPORTED[name]) placemark.skipReason = UNSUPPORTED[name]
      }
      if (name === 'Data') {
        placemark.dataName = attribute(tag, 'name') ?? ''
        placemark.dataValue = ''
      } else if (name === 'SimpleData') {
        placemark.dataName = attribute(tag, 'name') ?? ''
      }
      return
    }
    if (style) {
      if (name === 'Pair') {
        style.pairKey = ''
        style.pairUrl = ''
      }
      return
    }
    if (name === 'Folder') {
      emitFolders()
      folders.push({ name: '', emitted: false })
    } else if (name === 'Placemark') {
      emitFolders()
      placemark = {
        line: parser.line, depth: stack.length, name: '', description: null, styleId: null, geometryType: null, skipReason: null,
        outer: null, inner: [], coordinates: null, mediaLinks: [], extendedData: [], dataName: null, dataValue: ''
      }
    } else if ((name === 'Style' || name === 'StyleMap') && attribute(tag, 'id')) {
      style = { id: attribute(tag, 'id')!, kind: name, depth: stack.length, definition: {}, pairKey: '', pairUrl: '' }
    }
  })

  const onText = (t: string) => { text += t }
  parser.on('text', onText)
  parser.on('cdata', onText)

  parser.on('closetag', (tag: SaxesTag) => {
    const name = localName(tag.name)
    const value = text
    text = ''
    const parent = stack[stack.length - 2]
    const depth = stack.length
    stack.pop()

    if (style) {
      if (depth === style.depth) {
        queue.push({ kind: 'style', style: { id: style.id, kind: style.kind, definition: style.definition } })
        style = null
        return
      }
      if (name === 'key' && parent === 'Pair') style.pairKey = value.trim()
      else if (name === 'styleUrl' && parent === 'Pair') style.pairUrl = value.trim()
      else if (name === 'Pair') style.definition[`Pair.${style.pairKey || 'unknown'}`] = style.pairUrl
      else if (value.trim()) style.definition[stack.slice(style.depth).concat(name).join('.')] = value.trim()
      return
    }

    if (placemark) {
      const rel = depth - placemark.depth
      if (rel === 0) {
        const geometry = buildGeometry(placemark)
        if (typeof geometry === 'string') {
          queue.push({ kind: 'skipped', reason: geometry, name: placemark.name, line: placemark.line })
        } else {
          const raw = placemark.geometryType === 'Polygon' ? placemark.outer : placemark.coordinates
          queue.push({
            kind: 'placemark',
            placemark: {
              name: placemark.name,
              description: placemark.description,
              styleId: placemark.styleId,
              folderPath: folders.map((f) => f.name),
              geometry,
              coordinatesRaw: collapse(raw ?? ''),
              mediaLinks: placemark.mediaLinks,
              extendedData: placemark.extendedData
            }
          })
        }
        placemark = null
        return
      }
      if (rel === 1) {
        if (name === 'name') placemark.name = value.trim()
        else if (name === 'description') placemark.description = value.trim() || null
        else if (name === 'styleUrl') placemark.styleId = value.trim().replace(/^#/, '') || null
        return
      }
      if (name === 'value' && parent === 'Data' && placemark.dataName !== null) {
        placemark.dataValue = value
      } else if (name === 'Data' && placemark.dataName !== null) {
        if (placemark.dataName === 'gx_media_links') placemark.mediaLinks.push(...placemark.dataValue.trim().split(/\s+/).filter(Boolean))
        else placemark.extendedData.push({ key: placemark.dataName, value: placemark.dataValue.trim() })
        placemark.dataName = null
      } else if (name === 'SimpleData' && placemark.dataName !== null) {
        placemark.extendedData.push({ key: placemark.dataName, value: value.trim() })
        placemark.dataName = null
      } else if (name === 'coordinates' && !placemark.skipReason && placemark.geometryType) {
        const inPolygon = stack.includes('Polygon')
        if (!inPolygon) placemark.coordinates = value
        else if (stack.includes('outerBoundaryIs')) placemark.outer = value
        else if (stack.includes('innerBoundaryIs')) placemark.inner.push(value)
      }
      return
    }

    if (name === 'name' && parent === 'Folder' && folders.length) {
      folders[folders.length - 1].name = value.trim()
    } else if (name === 'Folder') {
      emitFolders()
      folders.pop()
    }
  })

  const fail = (err: unknown): never => {
    if (err instanceof KmlError) throw err
    const message = err instanceof Error ? err.message : String(err)
    // saxes prefixes its messages with "line:column: ".
    const m = /^(\d+):(\d+): (.*)$/s.exec(message)
    if (m) throw new KmlError(`malformed XML at line ${m[1]}, column ${m[2]}: ${m[3]}`, Number(m[1]), Number(m[2]))
    throw new KmlError(`malformed XML: ${message}`)
  }

  try {
    for await (const chunk of chunks) {
      parser.write(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }))
      if (queue.length) {
        yield* queue
        queue.length = 0
      }
    }
    parser.write(decoder.decode())
    parser.close()
  } catch (err) {
    fail(err)
  }
  if (!sawRoot) throw new KmlError('not a KML document: the file is empty')
  yield* queue
}
