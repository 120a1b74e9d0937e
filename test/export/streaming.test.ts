import t from 'tap'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { get, type IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { AddressInfo } from 'node:net'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { generateKml } from '../../scripts/generate-kml.ts'

const COUNT = 50_000
const MiB = 1024 * 1024

// A full collection on demand: what memory the export still holds, without the garbage it leaves to the collector.
setFlagsFromString('--expose-gc')
const gc = (() => {
  try {
    return runInNewContext('gc') as () => void
  } catch {
    return null
  }
})()
const heap = () => {
  gc!()
  return process.memoryUsage()
}

const request = (url: string) => new Promise<IncomingMessage>((resolve, reject) => get(url, resolve).on('error', reject))

t.test(`a ${COUNT.toLocaleString('en')}-placemark export streams in bounded memory, and stops when the dataset changes`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'export-stream-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'generated.kml')
  await generateKml(file, COUNT)
  const handle = await openTestDatabase(t)
  await importPlacemarks(handle, createReadStream(file), { timeZone: 'UTC', source: 'generated.kml' })
  const app = await buildTestApp(t, handle)
  // The box index (built by a process of its own at this size) lands in this process's memory: not during a download.
  await app.boxIndex.idle()
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  /** One whole download, read as fast as it comes, with the server's live memory sampled every MiB. */
  async function download () {
    const before = heap()
    let peakHeap = 0
    let peakAll = 0
    let bytes = 0
    let sampled = 0
    let tail = Buffer.alloc(0)
    const res = await request(`${base}/api/v1/export.kml`)
    for await (const chunk of res as AsyncIterable<Buffer>) {
      bytes += chunk.length
      // A copy: a slice would keep the chunk it came from alive.
      tail = Buffer.from(Buffer.concat([tail, chunk]).subarray(-64))
      if (bytes - sampled >= MiB) {
        sampled = bytes
        const now = heap()
        peakHeap = Math.max(peakHeap, now.heapUsed - before.heapUsed)
        peakAll = Math.max(peakAll, now.heapUsed + now.external - before.heapUsed - before.external)
      }
    }
    return { res, bytes, tail: tail.toString(), peakHeap, peakAll }
  }

  t.test('memory stays bounded while the whole document streams', { skip: gc === null ? 'this Node.js gives no way to run the garbage collector on demand (--expose-gc)' : false }, async (t) => {
    const first = await download()
    t.equal(first.res.statusCode, 200)
    t.equal(first.res.headers['transfer-encoding'], 'chunked', 'streamed, not sent with a length')
    t.match(first.tail, /<\/Document>\n<\/kml>\n$/, 'the whole document')
    t.ok(first.bytes > 12 * MiB, `${(first.bytes / MiB).toFixed(1)} MiB of KML`)
    // The document, or its rows, held in memory would take more than the document's size; one batch of
    // rows and a chunk of text take a few MiB.
    t.ok(first.peakHeap < 12 * MiB, `the JS heap grew at most ${(first.peakHeap / MiB).toFixed(1)} MiB while ${(first.bytes / MiB).toFixed(1)} MiB went out`)
    // Buffers the first download left to the allocator (sockets, pools) are reused: another download adds nothing.
    const second = await download()
    t.equal(second.bytes, first.bytes)
    t.ok(second.peakAll < 12 * MiB, `a second download: heap and buffers grew at most ${(second.peakAll / MiB).toFixed(1)} MiB`)
  })

  t.test('an import landing during a download cuts the download off', async (t) => {
    const res = await request(`${base}/api/v1/export.kml`)
    t.equal(res.statusCode, 200)
    res.pause()
    // Another dataset replaces this one while the client has read nothing yet.
    await importPlacemarks(handle, Readable.from(['<kml><Document><Placemark><name>new</name><Point><coordinates>1,2</coordinates></Point></Placemark></Document></kml>']), { timeZone: 'UTC', source: 'new.kml' })
    const ended = await new Promise<string>((resolve) => {
      res.on('end', () => resolve('complete'))
      res.on('aborted', () => resolve('aborted'))
      res.on('error', () => resolve('aborted'))
      res.resume()
    })
    t.equal(ended, 'aborted', 'not a document mixing two datasets')
  })
})
