import { spawn } from 'node:child_process'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Kysely } from 'kysely'
import { BoxIndex, BoxIndexBuilder } from '../lib/geo/box-index.ts'
import { fromWire } from '../lib/geo/box-index-wire.ts'
import { summaryPieces } from '../lib/placemarks/box-answer.ts'
import { placemarkIdRange, placemarkIdsInSpatialOrder, placemarksWithBounds, type PlacemarkWithBounds } from './placemarks.ts'
import type { Database } from './types.ts'
import { loadStyleResolver, summaryStyle } from './box-index-styles.ts'
import type { StyleResolver } from '../lib/kml/resolved-style.ts'

export interface BoxIndexLoadOptions {
  maxBytes: number
  // Placemarks read per query.
  pageSize?: number
  // Asked between pages (and, with a builder process, every STOP_POLL_MS): true gives up the load (null).
  stop?: () => boolean
  // Told the bytes an index of every placemark would need, when that is past maxBytes.
  tooBig?: (bytes: number) => void
  /**
   * A PostgreSQL connection string: from `workerFrom` placemarks on, the rows are read and the index
   * built in a process of its own (db/box-index-process.ts) with a connection of its own, and only the
   * finished index's bytes come back, read into one buffer. The rows' text, the pages' objects, the
   * decoding and the builder's garbage are the builder's: none of it is work on the server's event loop
   * while requests are being served, nor memory left behind in the server once the builder has exited
   * (a worker thread's freed memory stayed in the allocator's arenas: 30 to 60 MB at 1M).
   */
  workerUrl?: string
  workerFrom?: number
}

// Placemarks indexed to estimate the index's size before loading it.
const SAMPLE_SIZE = 2000
const STOP_POLL_MS = 50

/**
 * Reads every placemark's bounds and serialized summary into a box index, in spatial order: the order
 * first (ids only), then the rows in pages of that order. Gives up (null) when an index of a sample of
 * the placemarks, scaled to all of them, passes `maxBytes` (then before any ordering: a dataset far too
 * big costs two short queries), or once the index does while loading (both told to `tooBig` with the
 * bytes needed), or when `stop()` says so. Every query but the order is short, so none holds up an
 * import's table swap for long; the caller compares the dataset version before and after, since an
 * import committed in between would mix two datasets.
 */
export async function loadBoxIndex (db: Kysely<Database>, opts: BoxIndexLoadOptions): Promise<BoxIndex | null> {
  const { count, minId, maxId } = await placemarkIdRange(db)
  // The size first, from placemarks spread evenly over the ids, indexed the same way.
  if (count > SAMPLE_SIZE) {
    const sample = new BoxIndexBuilder()
    const span = maxId - minId + 1
    addRows(sample, await placemarksWithBounds(db, Array.from({ length: SAMPLE_SIZE }, (_, k) => minId + Math.floor((k * span) / SAMPLE_SIZE))), null)
    const estimate = sample.estimateFor(count)
    if (estimate > opts.maxBytes) {
      opts.tooBig?.(estimate)
      return null
    }
  }
  if (opts.workerUrl !== undefined && count >= (opts.workerFrom ?? 0)) return await buildInProcess(opts.workerUrl, opts)
  return await buildBoxIndex(db, opts)
}

function addRows (builder: BoxIndexBuilder, rows: PlacemarkWithBounds[], styles: StyleResolver | null): void {
  for (const row of rows) {
    // Its colour, for the tiles' clusters: its resolved style's icon colour (a point) or line colour.
    const { styleId, point } = summaryStyle(row.json)
    const colour = styles ? styles.resolve(styleId, point ? 'Point' : 'LineString').color ?? null : null
    builder.add({ ...row, json: summaryPieces(row.json), point, colour })
  }
}

/** The index of every placemark, read page by page in spatial order; see loadBoxIndex. */
export async function buildBoxIndex (db: Kysely<Database>, opts: BoxIndexLoadOptions): Promise<BoxIndex | null> {
  const styles = await loadStyleResolver(db)
  const order = await placemarkIdsInSpatialOrder(db)
  const builder = new BoxIndexBuilder(order.length)
  // Small pages keep each synchronous stretch of decoding short for the requests served meanwhile.
  const pageSize = opts.pageSize ?? 2000
  for (let start = 0; start < order.length; start += pageSize) {
    if (opts.stop?.()) return null
    addRows(builder, await placemarksWithBounds(db, order.subarray(start, start + pageSize)), styles)
    if (builder.heldBytes > opts.maxBytes) {
      opts.tooBig?.(builder.estimateFor(order.length))
      return null
    }
  }
  return builder.finish()
}

/**
 * What db/box-index-process.ts reads from its stdin (`server`: the pid of the process that started it), and
 * the header line it writes once the index's bytes are in `path`.
 */
export interface BoxIndexProcessInput { url: string; maxBytes: number; pageSize?: number; path: string; server: number }
export type BoxIndexProcessHeader = { kind: 'index'; parts: string; byteLength: number } | { kind: 'too-big'; bytes: number }

// The builder process's TypeScript loader (the npm scripts' own) and its heap: a page of rows at a time
// and the shared pieces' dictionary (the index itself is in buffers outside it). A small young
// generation is collected often instead of growing with garbage; the old generation may take pages of
// very long descriptions.
const PROCESS_ARGS = ['--import', fileURLToPath(new URL('../scripts/typescript.mjs', import.meta.url)), '--max-semi-space-size=2', '--max-old-space-size=1024']
// The end of the builder's stderr kept for the error of a failed load.
const STDERR_KEPT = 4096
// The index's bytes are read from the builder's file in steps of this many bytes.
const READ_STEP = 16 << 20

/**
 * The index built by db/box-index-process.ts. Its bytes come through a file in a private temporary
 * directory, read straight into one buffer: through a pipe they came in 64 KiB chunks, each allocated
 * and freed, which left 60 to 90 MB in the allocator at 1M.
 */
async function buildInProcess (url: string, opts: BoxIndexLoadOptions): Promise<BoxIndex | null> {
  const dir = await mkdtemp(join(tmpdir(), 'box-index-'))
  try {
    const path = join(dir, 'index')
    const header = await runBuilder({ url, maxBytes: opts.maxBytes, pageSize: opts.pageSize, path, server: process.pid }, opts)
    if (header === null) return null
    if (header.kind === 'too-big') {
      opts.tooBig?.(header.bytes)
      return null
    }
    const bytes = new Uint8Array(new ArrayBuffer(header.byteLength))
    const file = await open(path)
    try {
      for (let at = 0; at < bytes.length;) {
        const { bytesRead } = await file.read(bytes, at, Math.min(READ_STEP, bytes.length - at), at)
        if (bytesRead === 0) throw new Error(`the box index process wrote ${at} of ${bytes.length} bytes`)
        at += bytesRead
      }
    } finally {
      await file.close()
    }
    return BoxIndex.fromParts(fromWire(header.parts, bytes.buffer))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

// Runs the builder to its end: its header, or null when stopped.
function runBuilder (input: BoxIndexProcessInput, opts: BoxIndexLoadOptions): Promise<BoxIndexProcessHeader | null> {
  const child = spawn(process.execPath, [...PROCESS_ARGS, fileURLToPath(new URL('./box-index-process.ts', import.meta.url))], { stdio: ['pipe', 'pipe', 'pipe'] })
  child.stdin.end(JSON.stringify(input))
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    let failure: Error | null = null
    let stopped = false
    // Stopped, the builder is ended where it stands: its connection goes with it, and PostgreSQL ends the query.
    const poll = setInterval(() => {
      if (stopped || !opts.stop?.()) return
      stopped = true
      child.kill('SIGKILL')
    }, STOP_POLL_MS).unref()
    child.stdout.setEncoding('utf8').on('data', (text: string) => { stdout += text })
    child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr = (stderr + text).slice(-STDERR_KEPT) })
    child.on('error', (err) => { failure ??= err })
    // Settled once the builder is gone, its memory with it.
    child.on('close', (code, signal) => {
      clearInterval(poll)
      if (stopped) return resolve(null)
      if (failure !== null) return reject(failure)
      if (code !== 0 || !stdout.endsWith('\n')) {
        return reject(new Error(`the box index process exited (${signal ?? `code ${code}`}) without an index${stderr.trim() ? `: ${stderr.trim()}` : ''}`))
      }
      resolve(JSON.parse(stdout) as BoxIndexProcessHeader)
    })
  })
}
