/**
 * Writes a stored dataset back as KML, as a stream of text chunks: the reader (lib/kml/reader.ts) reads
 * what this writes into the same placemarks, styles and folders. Pure code: the rows come in batches from
 * whoever reads them (db/placemark-export.ts), and at most one batch is held at a time.
 */
import type { WrittenTime } from './time.ts'

export interface ExportPlacemark {
  id: number
  name: string
  description: string | null
  styleId: string | null
  folderPath: string[]
  geometryType: 'Point' | 'LineString' | 'Polygon'
  // The stored GeoJSON geometry text ([lon, lat] positions).
  geometry: string
  coordinatesRaw: string | null
  mediaLinks: string[]
  extendedData: { key: string; value: string }[]
  // ISO 8601 instants or KML dates, when the dataset stores a placemark's own time (TimeStamp/TimeSpan).
  timeBegin?: string | null
  timeEnd?: string | null
  // The time element as it was written, which wins over timeBegin/timeEnd: `{when}` a TimeStamp, `{begin, end}` a TimeSpan.
  time?: WrittenTime | null
}
export interface ExportStyle { id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }
// A folder as stored: ids follow the document order of the <Folder> start tags.
export interface ExportFolder { id: number; name: string; path: string[] }

export interface KmlWriteInput {
  // The <Document>'s name (the reader ignores it).
  title?: string
  styles: AsyncIterable<ExportStyle[]>
  folders: AsyncIterable<ExportFolder[]>
  placemarks: AsyncIterable<ExportPlacemark[]>
  // Write folders that hold no placemark of the export too (a whole-dataset export keeps every folder;
  // a filtered one only the folders around its placemarks).
  emptyFolders: boolean
}

// Characters XML 1.0 does not allow, and lone surrogates: dropped (stored text never holds them, as it was read from XML).
// eslint-disable-next-line no-control-regex
const INVALID = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const TEXT_SPECIAL = /[&<>\r]/g
const ATTRIBUTE_SPECIAL = /[&<>"\t\n\r]/g
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\t': '&#9;', '\n': '&#10;', '\r': '&#13;' }
const entity = (c: string) => ENTITIES[c]

const HAS_INVALID = new RegExp(INVALID.source)
const clean = (s: string) => (HAS_INVALID.test(s) ? s.replace(INVALID, '') : s)

/** Text content, escaped (a carriage return as a character reference, which line-end normalization keeps). */
export function escapeText (s: string): string {
  return clean(s).replace(TEXT_SPECIAL, entity)
}

/** An attribute value in double quotes, escaped (tabs and line ends too, which attribute normalization would turn into spaces). */
export function escapeAttribute (s: string): string {
  return clean(s).replace(ATTRIBUTE_SPECIAL, entity)
}

/**
 * Text that may hold markup (an HTML description): a CDATA section, which keeps it readable, split where
 * it holds `]]>`; escaped text when it holds a carriage return (CDATA cannot keep one through line-end
 * normalization) or no markup at all.
 */
export function markupText (s: string): string {
  const text = clean(s)
  if (!/[<&]/.test(text) || text.includes('\r')) return text.replace(TEXT_SPECIAL, entity)
  return `<![CDATA[${text.replaceAll(']]>', ']]]]><![CDATA[>')}]]>`
}

// ---- Styles --------------------------------------------------------------------------------------

interface ElementNode { name: string; attributes: [string, string][]; text: string | null; children: ElementNode[] }

const element = (name: string): ElementNode => ({ name, attributes: [], text: null, children: [] })

interface DefinitionEntry { segments: string[]; attribute: string | null; occurrence: number; value: string }

// `IconStyle.Icon.href`, `hotSpot@x`, `ItemIcon.href[2]`: the reader's keys (a repeated path numbered from 2).
function parseKey (key: string, value: string): DefinitionEntry | null {
  let rest = key
  let occurrence = 1
  const numbered = /\[(\d+)\]$/.exec(rest)
  if (numbered) {
    occurrence = Number(numbered[1])
    rest = rest.slice(0, numbered.index)
  }
  const at = rest.indexOf('@')
  const attribute = at < 0 ? null : rest.slice(at + 1)
  const path = at < 0 ? rest : rest.slice(0, at)
  const segments = path.split('.')
  if (segments.some((s) => !/^[A-Za-z_][\w.-]*$/.test(s)) || (attribute !== null && !/^[A-Za-z_][\w.:-]*$/.test(attribute))) return null
  return { segments, attribute, occurrence, value }
}

/**
 * The element tree of a flattened style definition. The reader numbers a repeated path in document
 * order, so the nth value of a path goes into the nth instance of its parent element (the ancestors above
 * that are shared): `ListStyle.ItemIcon.href` and `ListStyle.ItemIcon.href[2]` make two ItemIcons in one
 * ListStyle, and reading the tree back gives the same keys.
 */
function definitionTree (entries: DefinitionEntry[]): ElementNode {
  const root = element('')
  // Instances of each path, by path then instance number.
  const instances = new Map<string, ElementNode[]>()
  const instance = (segments: string[], n: number): ElementNode => {
    if (segments.length === 0) return root
    const path = segments.join('.')
    let list = instances.get(path)
    if (!list) instances.set(path, list = [])
    while (list.length < n) {
      const parent = instance(segments.slice(0, -1), 1)
      const child = element(segments[segments.length - 1])
      parent.children.push(child)
      list.push(child)
    }
    return list[n - 1]
  }
  // Values in occurrence order, so each path's instances appear in document order.
  const sorted = [...entries].sort((a, b) => a.occurrence - b.occurrence)
  // Leaves carrying a value, by path and occurrence: an attribute of the same occurrence joins its element
  // when that element has text (an element with attributes and no text is read as attributes only).
  const leaves = new Map<string, ElementNode>()
  const leafKey = (e: DefinitionEntry) => `${e.segments.join('.')}#${e.occurrence}`
  for (const e of sorted) {
    if (e.attribute !== null) continue
    const parent = instance(e.segments.slice(0, -1), e.segments.length > 1 ? e.occurrence : 1)
    const leaf = element(e.segments[e.segments.length - 1])
    leaf.text = e.value
    parent.children.push(leaf)
    leaves.set(leafKey(e), leaf)
  }
  for (const e of sorted) {
    if (e.attribute === null) continue
    const attribute = e.attribute
    // An element with children keeps its attributes; so does one with text (but not empty text, which the
    // reader records only for an element without attributes).
    const structural = instances.get(e.segments.join('.'))?.[e.occurrence - 1]
    const withText = leaves.get(leafKey(e))
    const host = structural && !structural.attributes.some(([name]) => name === attribute)
      ? structural
      : withText && withText.text !== '' && !withText.attributes.some(([name]) => name === attribute) ? withText : undefined
    if (host) {
      host.attributes.push([attribute, e.value])
      continue
    }
    // Its own element: the nth instance of the path among the ones that carry attributes only.
    const key = `${e.segments.join('.')}@`
    let list = instances.get(key)
    if (!list) instances.set(key, list = [])
    while (list.length < e.occurrence) {
      const parent = instance(e.segments.slice(0, -1), 1)
      const child = element(e.segments[e.segments.length - 1])
      parent.children.push(child)
      list.push(child)
    }
    list[e.occurrence - 1].attributes.push([e.attribute, e.value])
  }
  return root
}

function writeElement (node: ElementNode, out: string[]): void {
  const attributes = node.attributes.map(([name, value]) => ` ${name}="${escapeAttribute(value)}"`).join('')
  if (node.children.length === 0) {
    out.push(`<${node.name}${attributes}>${escapeText(node.text ?? '')}</${node.name}>`)
    return
  }
  out.push(`<${node.name}${attributes}>`)
  for (const child of node.children) writeElement(child, out)
  out.push(`</${node.name}>`)
}

/** A Style or StyleMap element rebuilt from its stored definition. */
export function styleXml (style: ExportStyle): string {
  const out: string[] = []
  if (style.kind === 'Style') {
    const entries = Object.entries(style.definition).map(([k, v]) => parseKey(k, v)).filter((e) => e !== null)
    for (const child of definitionTree(entries).children) writeElement(child, out)
    return `<Style id="${escapeAttribute(style.id)}">${out.join('')}</Style>\n`
  }
  // StyleMap: `Pair.<key>` is the pair's styleUrl, `Pair.<key>.<path>` a leaf of its inline style.
  const pairs = new Map<string, DefinitionEntry[]>()
  for (const [k, v] of Object.entries(style.definition)) {
    const m = /^Pair\.([^.[\]]*)(?:\.(.+?))?(\[\d+\])?$/.exec(k)
    if (!m) continue
    const entry = parseKey(`${m[2] ?? 'styleUrl'}${m[3] ?? ''}`, v)
    if (!entry) continue
    let list = pairs.get(m[1])
    if (!list) pairs.set(m[1], list = [])
    list.push(entry)
  }
  for (const [key, entries] of pairs) {
    out.push(`<Pair><key>${escapeText(key)}</key>`)
    for (const child of definitionTree(entries).children) writeElement(child, out)
    out.push('</Pair>')
  }
  return `<StyleMap id="${escapeAttribute(style.id)}">${out.join('')}</StyleMap>\n`
}

// ---- Placemarks ----------------------------------------------------------------------------------

type Ring = [number, number][]

const positions = (ring: Ring) => ring.map(([lon, lat]) => `${lon},${lat}`).join(' ')

function geometryXml (p: ExportPlacemark): string {
  const geometry = JSON.parse(p.geometry) as { type: string; coordinates: unknown }
  if (p.geometryType === 'Polygon') {
    const rings = geometry.coordinates as Ring[]
    const outer = p.coordinatesRaw ?? positions(rings[0])
    const inner = rings.slice(1).map((ring) => `<innerBoundaryIs><LinearRing><coordinates>${positions(ring)}</coordinates></LinearRing></innerBoundaryIs>`).join('')
    return `<Polygon><outerBoundaryIs><LinearRing><coordinates>${escapeText(outer)}</coordinates></LinearRing></outerBoundaryIs>${inner}</Polygon>`
  }
  const raw = p.coordinatesRaw ?? (p.geometryType === 'Point' ? positions([geometry.coordinates as [number, number]]) : positions(geometry.coordinates as Ring))
  return `<${p.geometryType}><coordinates>${escapeText(raw)}</coordinates></${p.geometryType}>`
}

function timeXml (p: ExportPlacemark): string {
  const written = p.time
  if (written) {
    if ('when' in written) return `<TimeStamp><when>${escapeText(written.when)}</when></TimeStamp>`
    if (written.begin !== undefined || written.end !== undefined) return spanXml(written.begin, written.end)
  }
  const begin = p.timeBegin
  const end = p.timeEnd
  if (!begin && !end) return ''
  if (begin && begin === end) return `<TimeStamp><when>${escapeText(begin)}</when></TimeStamp>`
  return spanXml(begin, end)
}

function spanXml (begin: string | null | undefined, end: string | null | undefined): string {
  return `<TimeSpan>${begin ? `<begin>${escapeText(begin)}</begin>` : ''}${end ? `<end>${escapeText(end)}</end>` : ''}</TimeSpan>`
}

/** One Placemark element, in the KML schema's order of children. */
export function placemarkXml (p: ExportPlacemark): string {
  let out = `<Placemark id="p${p.id}"><name>${escapeText(p.name)}</name>`
  if (p.description !== null) out += `<description>${markupText(p.description)}</description>`
  out += timeXml(p)
  if (p.styleId !== null) out += `<styleUrl>#${escapeText(p.styleId)}</styleUrl>`
  if (p.extendedData.length > 0 || p.mediaLinks.length > 0) {
    out += '<ExtendedData>'
    for (const { key, value } of p.extendedData) out += `<Data name="${escapeAttribute(key)}"><value>${markupText(value)}</value></Data>`
    if (p.mediaLinks.length > 0) out += `<Data name="gx_media_links"><value>${escapeText(p.mediaLinks.join(' '))}</value></Data>`
    out += '</ExtendedData>'
  }
  return `${out}${geometryXml(p)}</Placemark>\n`
}

// ---- Folders -------------------------------------------------------------------------------------

const samePath = (a: string[], b: string[], length: number) => {
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Pulls batches one item at a time, with a look at the next item. */
class Cursor<T> {
  private iterator: AsyncIterator<T[]>
  private batch: T[] = []
  private at = 0
  private done = false
  constructor (source: AsyncIterable<T[]>) {
    this.iterator = source[Symbol.asyncIterator]()
  }

  async peek (): Promise<T | undefined> {
    while (this.at >= this.batch.length && !this.done) {
      const next = await this.iterator.next()
      if (next.done) this.done = true
      else {
        this.batch = next.value
        this.at = 0
      }
    }
    return this.at < this.batch.length ? this.batch[this.at] : undefined
  }

  skip (): void {
    this.at++
  }

  async close (): Promise<void> {
    await this.iterator.return?.()
  }
}

const CHUNK_CHARS = 256 * 1024

/**
 * The KML document of a dataset, in chunks of about 256 KiB: the styles, then the placemarks in id order
 * inside their folders. The folders' nesting comes from the stored folders (document order, each inside
 * the nearest folder before it whose path is its own less its name); each placemark goes into the folder
 * open at its path, as early as the folders still to come allow, so that reading the document back gives
 * the same folders and the same placemarks' folder paths.
 */
export async function * writeKml (input: KmlWriteInput): AsyncGenerator<string> {
  let buffer = `<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2">\n<Document>\n${input.title === undefined ? '' : `<name>${escapeText(input.title)}</name>\n`}`
  const flush = function * (force = false): Generator<string> {
    if (buffer.length >= CHUNK_CHARS || (force && buffer.length > 0)) {
      yield buffer
      buffer = ''
    }
  }
  for await (const styles of input.styles) {
    for (const style of styles) buffer += styleXml(style)
    yield * flush()
  }

  const folders = new Cursor(input.folders)
  const placemarks = new Cursor(input.placemarks)
  // The open folders' names, and how many of them have had their start tag written.
  const open: string[] = []
  let written = 0
  const openFolder = (name: string) => {
    open.push(name)
    if (input.emptyFolders) writeOpened()
  }
  const writeOpened = () => {
    for (; written < open.length; written++) buffer += `<Folder><name>${escapeText(open[written])}</name>\n`
  }
  const closeTo = (depth: number) => {
    while (open.length > depth) {
      open.pop()
      if (written > open.length) {
        buffer += '</Folder>\n'
        written = open.length
      }
    }
  }
  try {
    for (let p = await placemarks.peek(); p !== undefined; p = await placemarks.peek()) {
      const next = await folders.peek()
      // Before the next folder starts, only the folders deeper than its parent may close.
      const floor = next === undefined ? 0 : next.path.length - 1
      const depth = p.folderPath.length
      if (depth >= floor && depth <= open.length && samePath(p.folderPath, open, depth)) {
        closeTo(depth)
        writeOpened()
        buffer += placemarkXml(p)
        placemarks.skip()
        yield * flush()
      } else if (next !== undefined) {
        closeTo(next.path.length - 1)
        openFolder(next.name)
        folders.skip()
      } else {
        // Folders that the stored ones do not account for (a dataset stored otherwise): opened by name.
        let common = 0
        while (common < Math.min(depth, open.length) && open[common] === p.folderPath[common]) common++
        closeTo(common)
        for (const name of p.folderPath.slice(common)) openFolder(name)
      }
    }
    if (input.emptyFolders) {
      for (let next = await folders.peek(); next !== undefined; next = await folders.peek()) {
        closeTo(next.path.length - 1)
        openFolder(next.name)
        folders.skip()
        yield * flush()
      }
    }
  } finally {
    await folders.close()
    await placemarks.close()
  }
  closeTo(0)
  buffer += '</Document>\n</kml>\n'
  yield * flush(true)
}
