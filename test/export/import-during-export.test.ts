/**
 * An import landing in the middle of an export: a download started on one dataset version never carries
 * a placemark of the next one. The client has read part of the document when the import commits; what
 * it receives after is cut off, and everything it received is the old version's (KML and KMZ alike).
 */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { get, type IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import { inflateRawSync, constants } from 'node:zlib'
import type { AddressInfo, Socket } from 'node:net'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { until } from '../support/shared-state.ts'

// Placemarks carrying 4 KB of data that does not compress (ExtendedData, outside the text search's index):
// about 25 MB of KML and 19 MB of KMZ, far more than loopback sockets' buffers (which grow to several MB)
// hold while the client waits.
const COUNT = 6000

// A connection of its own for each download, so that the server's side of it can be watched.
const request = (url: string) => new Promise<IncomingMessage>((resolve, reject) => get(url, { agent: false }, resolve).on('error', reject))

function * kml (prefix: string, count: number): Generator<string> {
  yield '<kml><Document>'
  for (let i = 0; i < count; i++) {
    yield `<Placemark><name>${prefix} ${i}</name><ExtendedData><Data name="blob"><value>${randomBytes(3000).toString('base64')}</value></Data></ExtendedData>` +
      `<Point><coordinates>${(i % 360) - 180},${(i % 170) - 85}</coordinates></Point></Placemark>`
  }
  yield '</Document></kml>'
}

/** The placemarks' names in a (possibly partial) KML text. */
const names = (kml: string) => [...kml.matchAll(/<Placemark[^>]*>\s*<name>([^<]*)<\/name>/g)].map((m) => m[1]!)

/** doc.kml as far as the received bytes of a KMZ go (a zip whose first entry is deflated). */
function partialKml (kmz: Buffer): string {
  const start = 30 + kmz.readUInt16LE(26) + kmz.readUInt16LE(28)
  return inflateRawSync(kmz.subarray(start), { finishFlush: constants.Z_SYNC_FLUSH }).toString()
}

t.test('an import committed while a client is half way through a download: the download never carries the new version', async (t) => {
  const handle = await openTestDatabase(t)
  const load = (prefix: string, count = COUNT) => importPlacemarks(handle, Readable.from(kml(prefix, count)), { timeZone: 'UTC', source: `${prefix}.kml` })
  await load('A')
  const app = await buildTestApp(t, handle)
  await app.boxIndex.idle()
  // The server's side of each connection: how far ahead of the client its answer has got.
  const sockets: Socket[] = []
  app.server.on('connection', (socket: Socket) => sockets.push(socket))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  /** The whole document of a download that nothing interrupts, and its placemarks' names. */
  const download = async (extension: 'kml' | 'kmz' = 'kml') => {
    const res = await request(`${base}/api/v1/export.${extension}`)
    const chunks: Buffer[] = []
    for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk)
    return { res, body: Buffer.concat(chunks) }
  }
  const whole = (await download()).body.toString()
  t.same(names(whole), Array.from({ length: COUNT }, (_, i) => `A ${i}`), `the first version: ${COUNT} placemarks, ${(whole.length / 1048576).toFixed(1)} MB of KML`)

  // Each case: the old version, and the import that replaces it during the download.
  const cases = [
    { extension: 'kml', old: 'A', next: () => load('B') },
    { extension: 'kmz', old: 'B', next: () => load('New', 3) }
  ] as const
  for (const { extension, old, next } of cases) {
    t.test(`${extension}: ${old} replaced during the download`, async (t) => {
      const oldNames = Array.from({ length: COUNT }, (_, i) => `${old} ${i}`)
      const version = Number(/^W\/"(\d+)"$/.exec(String((await app.inject({ method: 'HEAD', url: `/api/v1/export.${extension}` })).headers.etag))![1])
      const res = await request(`${base}/api/v1/export.${extension}`)
      t.equal(res.statusCode, 200)
      t.equal(res.headers.etag, `W/"${version}"`, 'named after the version it started on')
      // Part of the document read, then the client stops reading.
      const received: Buffer[] = []
      let bytes = 0
      await new Promise<void>((resolve) => {
        const onData = (chunk: Buffer) => {
          received.push(chunk)
          bytes += chunk.length
          if (bytes >= 64 * 1024) {
            res.off('data', onData)
            res.pause()
            resolve()
          }
        }
        res.on('data', onData)
      })
      // Until the server, writing ahead, is held up by the client's full buffers.
      const server = sockets.at(-1)!
      let written = -1
      t.ok(await until(async () => {
        const now = server.bytesWritten
        const held = now === written && server.writableNeedDrain
        written = now
        return held
      }, 10_000) >= 0, 'the server waits on the client')
      t.ok(written < whole.length / 2, `the server is ${(written / 1048576).toFixed(1)} MB into a document of about ${(whole.length / 1048576).toFixed(1)} MB of KML`)

      const summary = await next()
      t.equal(summary.version, version + 1, 'the new version is committed')
      const ended = await new Promise<string>((resolve) => {
        res.on('data', (chunk: Buffer) => received.push(chunk))
        res.on('end', () => resolve('complete'))
        res.on('aborted', () => resolve('aborted'))
        res.on('error', () => resolve('aborted'))
        res.resume()
      })
      t.equal(ended, 'aborted', 'the download is cut off: not completed with placemarks of another version')
      const body = Buffer.concat(received)
      const kml = extension === 'kml' ? body.toString() : partialKml(body)
      const got = names(kml)
      t.ok(got.length > 0 && got.length < COUNT, `${got.length} placemarks received before the cut`)
      t.same(got, oldNames.slice(0, got.length), 'each one the old version\'s, in order')
      t.notMatch(kml, /<\/kml>/, 'no end of document: a client cannot take it for a whole one')

      // A new download gives the new version, whole.
      const fresh = await download(extension)
      t.equal(fresh.res.headers.etag, `W/"${version + 1}"`, 'the next download: the new version')
      const freshNames = names(extension === 'kml' ? fresh.body.toString() : partialKml(fresh.body))
      t.equal(freshNames.length, summary.placemarks, `all ${summary.placemarks} of its placemarks`)
      t.notOk(freshNames.some((n) => n.startsWith(`${old} `)), 'none of the old version')
    })
  }
})
