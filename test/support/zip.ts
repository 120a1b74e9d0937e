import { once } from 'node:events'
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib'

/** Deflated bytes with the size and CRC-32 of what they inflate to. */
export interface Deflated { bytes: Buffer; size: number; crc: number }

export interface ZipEntry {
  name: string
  data?: string | Buffer
  // Already deflated content (for entries too large to hold inflated), instead of data.
  deflated?: Deflated
  // The uncompressed size written in both headers, when it should differ from the real one.
  declaredSize?: number
  // The compressed size written in both headers, when it should differ from the real one.
  declaredCompressedSize?: number
}

export interface ZipOptions {
  // Bytes after the end-of-central-directory record (a comment when commentLength matches).
  comment?: string | Buffer
  // The comment length written in the record; the comment's real length unless given.
  commentLength?: number
}

/** Deflates the parts one at a time, so that the inflated content is never held whole. */
export async function deflateParts (parts: Iterable<string | Buffer>): Promise<Deflated> {
  const deflate = createDeflateRaw({ level: 9 })
  const out: Buffer[] = []
  deflate.on('data', (chunk: Buffer) => out.push(chunk))
  let size = 0
  let crc = 0
  for (const part of parts) {
    const buf = Buffer.isBuffer(part) ? part : Buffer.from(part)
    size += buf.length
    crc = crc32(buf, crc)
    if (!deflate.write(buf)) await once(deflate, 'drain')
  }
  deflate.end()
  await once(deflate, 'end')
  return { bytes: Buffer.concat(out), size, crc }
}

// Writes a minimal ZIP archive (deflated entries) so tests can build KMZ files of any shape.
export function makeZip (entries: ZipEntry[], options: ZipOptions = {}): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const entry of entries) {
    let content: Deflated
    if (entry.deflated) content = entry.deflated
    else {
      const raw = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data ?? '')
      content = { bytes: deflateRawSync(raw), size: raw.length, crc: crc32(raw) }
    }
    const size = entry.declaredSize ?? content.size
    const packedSize = entry.declaredCompressedSize ?? content.bytes.length
    const nameBuf = Buffer.from(entry.name)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt16LE(0, 6); local.writeUInt16LE(8, 8)
    local.writeUInt32LE(content.crc, 14); local.writeUInt32LE(packedSize, 18); local.writeUInt32LE(size, 22)
    local.writeUInt16LE(nameBuf.length, 26); local.writeUInt16LE(0, 28)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0); central.writeUInt16LE(20, 4); central.writeUInt16LE(20, 6); central.writeUInt16LE(8, 10)
    central.writeUInt32LE(content.crc, 16); central.writeUInt32LE(packedSize, 20); central.writeUInt32LE(size, 24)
    central.writeUInt16LE(nameBuf.length, 28); central.writeUInt32LE(offset, 42)
    locals.push(local, nameBuf, content.bytes)
    centrals.push(central, nameBuf)
    offset += local.length + nameBuf.length + content.bytes.length
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0)
  const comment = options.comment === undefined ? Buffer.alloc(0) : Buffer.isBuffer(options.comment) ? options.comment : Buffer.from(options.comment)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(centralSize, 12); end.writeUInt32LE(offset, 16)
  end.writeUInt16LE(options.commentLength ?? comment.length, 20)
  return Buffer.concat([...locals, ...centrals, end, comment])
}
