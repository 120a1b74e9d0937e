import { createReadStream } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import yauzl from 'yauzl'

export class KmlSourceError extends Error {
  override name = 'KmlSourceError'
}

export interface KmlSource {
  chunks: AsyncIterable<Buffer>
  kind: 'kml' | 'kmz'
  entryName?: string
  close(): void
}

async function startsWithZipSignature(path: string): Promise<boolean> {
  const handle = await open(path, 'r')
  try {
    const buf = Buffer.alloc(4)
    const { bytesRead } = await handle.read(buf, 0, 4, 0)
    return bytesRead === 4 && buf.readUInt32LE(0) === 0x04034b50
  } finally {
    await handle.close()
  }
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (err, zip) => (err || !zip ? reject(err) : resolve(zip)))
  })
}

// doc.kml at the root is the KMZ convention; otherwise the first .kml entry in the archive.
function findKmlEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    let first: yauzl.Entry | null = null
    zip.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName === 'doc.kml') return resolve(entry)
      if (!first && /\.kml$/i.test(entry.fileName) && !entry.fileName.endsWith('/')) first = entry
      zip.readEntry()
    })
    zip.on('end', () => resolve(first))
    zip.on('error', reject)
    zip.readEntry()
  })
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => (err || !stream ? reject(err) : resolve(stream)))
  })
}

export async function openKmlSource(path: string): Promise<KmlSource> {
  let info
  try {
    info = await stat(path)
  } catch {
    throw new KmlSourceError(`file not found: ${path}`)
  }
  if (!info.isFile()) throw new KmlSourceError(`not a file: ${path}`)
  if (!(await startsWithZipSignature(path))) {
    const stream = createReadStream(path, { highWaterMark: 64 * 1024 })
    return { chunks: stream, kind: 'kml', close: () => stream.destroy() }
  }
  let zip: yauzl.ZipFile
  try {
    zip = await openZip(path)
  } catch (err) {
    throw new KmlSourceError(`cannot read KMZ ${path}: ${(err as Error).message}`)
  }
  try {
    const entry = await findKmlEntry(zip)
    if (!entry) throw new KmlSourceError(`no .kml file inside ${path}`)
    const stream = await openEntry(zip, entry)
    return { chunks: stream, kind: 'kmz', entryName: entry.fileName, close: () => { stream.destroy(); zip.close() } }
  } catch (err) {
    zip.close()
    if (err instanceof KmlSourceError) throw err
    throw new KmlSourceError(`cannot read KMZ ${path}: ${(err as Error).message}`)
  }
}
