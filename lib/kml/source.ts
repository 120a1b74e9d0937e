import { createReadStream } from 'node:fs'
import { open, stat, type FileHandle } from 'node:fs/promises'
import { Readable } from 'node:stream'
import yauzl from 'yauzl'

export class KmlSourceError extends Error {
  override name = 'KmlSourceError'
}

/** An image a KMZ holds beside its KML (the icons its styles point to), kept at its path in the archive. */
export interface KmzIcon { name: string; type: string; data: Buffer }

export interface KmlSource {
  chunks: AsyncIterable<Buffer>
  kind: 'kml' | 'kmz'
  entryName?: string
  // A KMZ's images within the limits (KMZ_ICON_LIMITS), and those left out with the reason; empty for a KML.
  icons: KmzIcon[]
  skippedIcons: { name: string; reason: string }[]
  // Bytes of KML to read: the file's size, or the size a KMZ entry declares (checked against the limits).
  size?: number
  close(): void
}

const HIGH_WATER_MARK = 64 * 1024
const MiB = 1024 * 1024

/**
 * What the KML entry of a KMZ may inflate to. An entry up to ratioFreeBytes may compress any amount;
 * past it, to at most maxRatio times its compressed size, and never past maxUncompressedBytes. The
 * sizes the archive declares are checked before anything is inflated, and the bytes are counted
 * while inflating too, since declared sizes can lie.
 */
export interface KmzLimits {
  maxUncompressedBytes: number
  maxRatio: number
  ratioFreeBytes: number
}

export const KMZ_LIMITS: Readonly<KmzLimits> = Object.freeze({
  maxUncompressedBytes: 2 * 1024 * MiB,
  maxRatio: 100,
  ratioFreeBytes: 8 * MiB
})

/**
 * The images a KMZ may bring: at most maxCount files of at most maxBytes each and maxTotalBytes in all, PNG,
 * JPEG or GIF (by name and by content). Past a limit, or of another kind, an image is left out and named
 * in the import's summary; the placemarks are imported all the same.
 */
export interface KmzIconLimits {
  maxCount: number
  maxBytes: number
  maxTotalBytes: number
}

export const KMZ_ICON_LIMITS: Readonly<KmzIconLimits> = Object.freeze({
  maxCount: 500,
  maxBytes: MiB,
  maxTotalBytes: 32 * MiB
})

export interface KmlSourceOptions {
  kmzLimits?: Partial<KmzLimits>
  iconLimits?: Partial<KmzIconLimits>
}

// The end-of-central-directory record: its signature, its size without the comment, and how far
// from the end of the file it is looked for (a comment of up to 64 KiB, and junk after it).
const EOCD_SIGNATURE = Buffer.from([0x50, 0x4b, 0x05, 0x06])
const CENTRAL_SIGNATURE = 0x02014b50
const EOCD_SIZE = 22
const EOCD_SCAN_BYTES = MiB + 64 * 1024 + EOCD_SIZE

const bytes = (n: number) => (n % (1024 * MiB) === 0 ? `${n / 1024 / MiB} GiB` : n % MiB === 0 ? `${n / MiB} MiB` : `${n} bytes`)

function reason (err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.split('\n')[0]
}

async function isZip (path: string): Promise<boolean> {
  const handle = await open(path, 'r')
  try {
    const head = Buffer.alloc(4)
    const { bytesRead } = await handle.read(head, 0, 4, 0)
    // An empty archive has only the end-of-central-directory record, so it starts with PK\x05\x06.
    return bytesRead === 4 && head[0] === 0x50 && head[1] === 0x4b && ((head[2] === 3 && head[3] === 4) || (head[2] === 5 && head[3] === 6))
  } finally {
    await handle.close()
  }
}

async function * guard (stream: AsyncIterable<Buffer>, describe: (err: unknown) => KmlSourceError, done: () => void): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of stream) yield chunk as Buffer
  } catch (err) {
    throw err instanceof KmlSourceError ? err : describe(err)
  } finally {
    done()
  }
}

/**
 * The offset of the end-of-central-directory record, found by its signature from the end of the file
 * and accepted only when the central directory it points to is there. Its comment length is not
 * trusted: archives with a wrong one, or with bytes appended after it, are common and other zip
 * readers open them.
 */
async function findEndRecord (handle: FileHandle, size: number): Promise<number | null> {
  const scan = Math.min(size, EOCD_SCAN_BYTES)
  const tail = Buffer.alloc(scan)
  await handle.read(tail, 0, scan, size - scan)
  const probe = Buffer.alloc(4)
  for (let i = tail.lastIndexOf(EOCD_SIGNATURE, scan - EOCD_SIZE); i >= 0; i = i > 0 ? tail.lastIndexOf(EOCD_SIGNATURE, i - 1) : -1) {
    const at = size - scan + i
    const entries = tail.readUInt16LE(i + 10)
    const centralSize = tail.readUInt32LE(i + 12)
    const centralOffset = tail.readUInt32LE(i + 16)
    // ZIP64 archives keep the real values in their own record, which the zip reader checks.
    if (entries === 0xffff || centralSize === 0xffffffff || centralOffset === 0xffffffff) return at
    if (centralOffset + centralSize > at) continue
    if (entries === 0) return at
    const { bytesRead } = await handle.read(probe, 0, 4, centralOffset)
    if (bytesRead === 4 && probe.readUInt32LE(0) === CENTRAL_SIGNATURE) return at
  }
  return null
}

/**
 * The archive as the zip reader sees it: the file up to the end of its end-of-central-directory
 * record, whose comment length reads 0, so that trailing bytes and a wrong length do not matter.
 */
class TrimmedZipReader extends yauzl.RandomAccessReader {
  private readonly handle: FileHandle
  private readonly endRecord: number
  constructor (handle: FileHandle, endRecord: number) {
    super()
    this.handle = handle
    this.endRecord = endRecord
  }

  override _readStreamForRange (start: number, end: number): Readable {
    return Readable.from(this.range(start, end), { objectMode: false })
  }

  private async * range (start: number, end: number): AsyncGenerator<Buffer> {
    const commentLength = this.endRecord + 20
    for (let pos = start; pos < end;) {
      const want = Math.min(HIGH_WATER_MARK, end - pos)
      const buf = Buffer.allocUnsafe(want)
      const { bytesRead } = await this.handle.read(buf, 0, want, pos)
      if (bytesRead === 0) throw new Error('unexpected end of file')
      const chunk = buf.subarray(0, bytesRead)
      for (let k = Math.max(pos, commentLength); k < Math.min(pos + bytesRead, commentLength + 2); k++) chunk[k - pos] = 0
      yield chunk
      pos += bytesRead
    }
  }

  override close (callback: (err: Error | null) => void): void {
    this.handle.close().then(() => callback(null), callback)
  }
}

async function openZip (path: string): Promise<yauzl.ZipFile> {
  const handle = await open(path, 'r')
  let reader: TrimmedZipReader
  try {
    const { size } = await handle.stat()
    const endRecord = await findEndRecord(handle, size)
    if (endRecord === null) throw new Error('end of central directory record signature not found')
    reader = new TrimmedZipReader(handle, endRecord)
    return await new Promise((resolve, reject) => {
      yauzl.fromRandomAccessReader(reader, endRecord + EOCD_SIZE, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip)))
    })
  } catch (err) {
    await handle.close().catch(() => {})
    throw err
  }
}

/** The most bytes the entry may inflate to, or why it may not be inflated at all. */
function checkEntrySize (path: string, entry: yauzl.Entry, limits: KmzLimits): number {
  const name = entry.fileName
  const declared = entry.uncompressedSize
  if (declared > limits.maxUncompressedBytes) {
    throw new KmlSourceError(`refusing KMZ ${path}: ${name} would inflate to ${declared} bytes, over the ${bytes(limits.maxUncompressedBytes)} limit`)
  }
  const byRatio = Math.max(limits.ratioFreeBytes, limits.maxRatio * entry.compressedSize)
  if (declared > byRatio) {
    const ratio = entry.compressedSize > 0 ? Math.round(declared / entry.compressedSize) : Infinity
    throw new KmlSourceError(`refusing KMZ ${path}: ${name} would inflate ${entry.compressedSize} bytes to ${declared} (${ratio}:1, over the ${limits.maxRatio}:1 limit for entries past ${bytes(limits.ratioFreeBytes)}); it looks like a zip bomb`)
  }
  return Math.min(declared, limits.maxUncompressedBytes, byRatio)
}

// Counts the inflated bytes: an entry inflating past its declared size is refused at that point.
async function * counted (chunks: AsyncIterable<Buffer>, allowed: number, bomb: () => KmlSourceError): AsyncGenerator<Buffer> {
  let total = 0
  for await (const chunk of chunks) {
    total += chunk.length
    if (total > allowed) throw bomb()
    yield chunk
  }
}

// The image kinds kept, by extension: their media type and the bytes each file must start with.
const IMAGE_KINDS: Record<string, { type: string; magic: Buffer[] }> = {
  png: { type: 'image/png', magic: [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])] },
  jpg: { type: 'image/jpeg', magic: [Buffer.from([0xff, 0xd8, 0xff])] },
  jpeg: { type: 'image/jpeg', magic: [Buffer.from([0xff, 0xd8, 0xff])] },
  gif: { type: 'image/gif', magic: [Buffer.from('GIF87a'), Buffer.from('GIF89a')] }
}

/** The media type of an image path a KMZ may hold (`images/icon-1.png`), or null. */
export function iconType (name: string): string | null {
  return IMAGE_KINDS[/\.([A-Za-z]+)$/.exec(name)?.[1]?.toLowerCase() ?? '']?.type ?? null
}

/**
 * Whether a path is one an icon may be stored and served under: relative, `/`-separated, with no empty,
 * `.` or `..` segment, no backslash or control character, at most 255 characters.
 */
export function isIconPath (name: string): boolean {
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > 255 || /[\\\u0000-\u001f\u007f]/.test(name) || name.startsWith('/')) return false
  return name.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..')
}

// The KML entry (doc.kml, or else the first .kml) and the images, from one pass over the central directory.
function scanEntries (zip: yauzl.ZipFile): Promise<{ kml: yauzl.Entry | null; images: yauzl.Entry[] }> {
  return new Promise((resolve, reject) => {
    let doc: yauzl.Entry | null = null
    let first: yauzl.Entry | null = null
    const images: yauzl.Entry[] = []
    zip.on('error', reject)
    zip.on('entry', (entry: yauzl.Entry) => {
      const name = entry.fileName
      if (name.toLowerCase() === 'doc.kml') doc ??= entry
      else if (first === null && !name.endsWith('/') && name.toLowerCase().endsWith('.kml')) first = entry
      else if (!name.endsWith('/') && iconType(name) !== null) images.push(entry)
      zip.readEntry()
    })
    zip.on('end', () => {
      zip.removeAllListeners('entry')
      zip.removeAllListeners('end')
      resolve({ kml: doc ?? first, images })
    })
    zip.readEntry()
  })
}

// Reads an entry whole, up to `limit` bytes (null past it).
async function readEntry (zip: yauzl.ZipFile, entry: yauzl.Entry, limit: number): Promise<Buffer | null> {
  const stream = await openEntry(zip, entry)
  const parts: Buffer[] = []
  let total = 0
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length
    if (total > limit) {
      stream.destroy()
      return null
    }
    parts.push(chunk)
  }
  return Buffer.concat(parts)
}

/** The archive's images within the limits, and the others with the reason they were left out. */
async function readIcons (zip: yauzl.ZipFile, entries: yauzl.Entry[], limits: KmzIconLimits): Promise<{ icons: KmzIcon[]; skipped: { name: string; reason: string }[] }> {
  const icons: KmzIcon[] = []
  const skipped: { name: string; reason: string }[] = []
  let total = 0
  for (const entry of entries) {
    const name = entry.fileName
    const skip = (reason: string) => { skipped.push({ name, reason }) }
    if (!isIconPath(name)) { skip('not a plain relative path'); continue }
    if (icons.length >= limits.maxCount) { skip(`more than ${limits.maxCount} images`); continue }
    if (entry.uncompressedSize > limits.maxBytes) { skip(`over ${bytes(limits.maxBytes)}`); continue }
    if (total + entry.uncompressedSize > limits.maxTotalBytes) { skip(`past ${bytes(limits.maxTotalBytes)} of images in all`); continue }
    let data: Buffer | null
    try {
      data = await readEntry(zip, entry, Math.min(limits.maxBytes, entry.uncompressedSize))
    } catch (err) {
      skip(`unreadable: ${reason(err)}`)
      continue
    }
    if (data === null) { skip('inflates past its declared size'); continue }
    const kind = IMAGE_KINDS[/\.([A-Za-z]+)$/.exec(name)![1].toLowerCase()]
    if (!kind.magic.some((m) => data.subarray(0, m.length).equals(m))) { skip(`not a ${kind.type} image`); continue }
    total += data.length
    icons.push({ name, type: kind.type, data })
  }
  return { icons, skipped }
}

function openEntry (zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream)))
  })
}

async function openKmz (path: string, limits: KmzLimits, iconLimits: KmzIconLimits): Promise<KmlSource> {
  const corrupt = (err: unknown) => new KmlSourceError(`cannot read KMZ ${path}: ${reason(err)}`)
  let zip: yauzl.ZipFile
  try {
    zip = await openZip(path)
  } catch (err) {
    throw corrupt(err)
  }
  let stream: Readable | null = null
  const close = () => {
    stream?.destroy()
    zip.close()
  }
  try {
    const { kml: entry, images } = await scanEntries(zip)
    if (entry === null) throw new KmlSourceError(`no .kml file inside ${path}`)
    const { icons, skipped: skippedIcons } = await readIcons(zip, images, iconLimits)
    const allowed = checkEntrySize(path, entry, limits)
    const found = entry
    const bomb = () => new KmlSourceError(`refusing KMZ ${path}: ${found.fileName} inflates to more than its declared ${found.uncompressedSize} bytes; the archive is corrupt or a zip bomb`)
    stream = await openEntry(zip, entry)
    // Errors after the entry is found surface through the stream, and an unhandled 'error' would crash the process.
    zip.removeAllListeners('error')
    zip.on('error', () => {})
    // The zip reader stops an entry at its declared size too; either way the message is the same.
    const describe = (err: unknown) => (/too many bytes in the stream/.test(reason(err)) ? bomb() : corrupt(err))
    return { chunks: guard(counted(stream, allowed, bomb), describe, close), kind: 'kmz', entryName: entry.fileName, size: entry.uncompressedSize, icons, skippedIcons, close }
  } catch (err) {
    close()
    throw err instanceof KmlSourceError ? err : corrupt(err)
  }
}

const HEAD_BYTES = 4096

async function readHead (path: string): Promise<Buffer> {
  const handle = await open(path, 'r')
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(HEAD_BYTES), 0, HEAD_BYTES, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

/**
 * Why the start of a file shows it is not KML (null when it may be): it does not begin with XML, or its
 * first element is not <kml>. Said before anything is opened or written, in words a person can act on.
 */
export function notKml (head: Buffer): string | null {
  if (head.length === 0) return 'it is empty'
  let text: string
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) text = new TextDecoder(head[0] === 0xff ? 'utf-16le' : 'utf-16be').decode(head)
  else text = head.toString('latin1').replace(/^\xEF\xBB\xBF/, '')
  const start = text.replace(/^\uFEFF/, '').trimStart()
  if (!start.startsWith('<')) {
    const printable = /^[\x20-\x7e]/.test(start) ? `"${start.slice(0, 12).replace(/\s+/g, ' ')}…"` : 'binary data'
    return `it starts with ${printable}, not with XML`
  }
  // The first element after the declaration, comments and doctype.
  const root = /<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s>/]/.exec(start.replace(/<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<![^>]*>/g, ''))
  if (root && root[2] !== 'kml') return `its first element is <${(root[1] ?? '') + root[2]}>, not <kml>`
  return null
}

/** Opens a .kml or .kmz file (told apart by content) as a stream of raw KML bytes. */
export async function openKmlSource (path: string, options: KmlSourceOptions = {}): Promise<KmlSource> {
  const limits: KmzLimits = { ...KMZ_LIMITS, ...options.kmzLimits }
  let size: number
  try {
    const info = await stat(path)
    if (!info.isFile()) throw new KmlSourceError(`not a file: ${path}`)
    size = info.size
    if (await isZip(path)) return await openKmz(path, limits, { ...KMZ_ICON_LIMITS, ...options.iconLimits })
  } catch (err) {
    if (err instanceof KmlSourceError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new KmlSourceError(`file not found: ${path}`)
    if (code === 'EISDIR') throw new KmlSourceError(`not a file: ${path}`)
    throw new KmlSourceError(`cannot read ${path}: ${reason(err)}`)
  }
  const refusal = notKml(await readHead(path))
  if (refusal) throw new KmlSourceError(`${path} is not a KML or KMZ file: ${refusal}`)
  const stream = createReadStream(path, { highWaterMark: HIGH_WATER_MARK })
  const close = () => stream.destroy()
  return { chunks: guard(stream, (err) => new KmlSourceError(`cannot read ${path}: ${reason(err)}`), close), kind: 'kml', size, icons: [], skippedIcons: [], close }
}
