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

const HIGH_WATER_MARK = 64 * 1024

function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.split('\n')[0]
}

async function isZip(path: string): Promise<boolean> {
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

async function* guard(stream: Readable, describe: (err: unknown) => KmlSourceError, done: () => void): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of stream) yield chunk as Buffer
  } catch (err) {
    throw err instanceof KmlSourceError ? err : describe(err)
  } finally {
    done()
  }
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (err, zip) => (err ? reject(err) : resolve(zip)))
  })
}

function findKmlEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    let first: yauzl.Entry | null = null
    const finish = (entry: yauzl.Entry | null) => {
      zip.removeAllListeners('entry')
      zip.removeAllListeners('end')
      resolve(entry)
    }
    zip.on('error', reject)
    zip.on('entry', (entry: yauzl.Entry) => {
      const name = entry.fileName
      if (name.toLowerCase() === 'doc.kml') return finish(entry)
      if (first === null && !name.endsWith('/') && name.toLowerCase().endsWith('.kml')) first = entry
      zip.readEntry()
    })
    zip.on('end', () => finish(first))
    zip.readEntry()
  })
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream)))
  })
}

async function openKmz(path: string): Promise<KmlSource> {
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
    const entry = await findKmlEntry(zip)
    if (entry === null) throw new KmlSourceError(`no .kml file inside ${path}`)
    stream = await openEntry(zip, entry)
    // Errors after the entry is found surface through the stream, and an unhandled 'error' would crash the process.
    zip.removeAllListeners('error')
    zip.on('error', () => {})
    return { chunks: guard(stream, corrupt, close), kind: 'kmz', entryName: entry.fileName, close }
  } catch (err) {
    close()
    throw err instanceof KmlSourceError ? err : corrupt(err)
  }
}

/** Opens a .kml or .kmz file (told apart by content) as a stream of raw KML bytes. */
export async function openKmlSource(path: string): Promise<KmlSource> {
  try {
    const info = await stat(path)
    if (!info.isFile()) throw new KmlSourceError(`not a file: ${path}`)
    if (await isZip(path)) return await openKmz(path)
  } catch (err) {
    if (err instanceof KmlSourceError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new KmlSourceError(`file not found: ${path}`)
    if (code === 'EISDIR') throw new KmlSourceError(`not a file: ${path}`)
    throw new KmlSourceError(`cannot read ${path}: ${reason(err)}`)
  }
  const stream = createReadStream(path, { highWaterMark: HIGH_WATER_MARK })
  const close = () => stream.destroy()
  return { chunks: guard(stream, (err) => new KmlSourceError(`cannot read ${path}: ${reason(err)}`), close), kind: 'kml', close }
}
