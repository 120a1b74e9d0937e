import { Worker } from 'node:worker_threads'
import type { Kysely } from 'kysely'
import { BoxIndex, BoxIndexBuilder, type BoxIndexParts } from '../lib/geo/box-index.ts'
import { summaryPieces } from '../lib/placemarks/box-answer.ts'
import { placemarkIdRange, placemarkIdsInSpatialOrder, placemarksWithBounds, type PlacemarkWithBounds } from './placemarks.ts'
import type { Database } from './types.ts'
import { loadStyleResolver, summaryStyle } from './box-index-styles.ts'
import type { StyleResolver } from '../lib/kml/resolved-style.ts'

export interface BoxIndexLoadOptions {
  maxBytes: number
  // Placemarks read per query.
  pageSize?: number
  // Asked between pages (and, in a worker, every STOP_POLL_MS): true gives up the load (null).
  stop?: () => boolean
  // Told the bytes an index of every placemark would need, when that is past maxBytes.
  tooBig?: (bytes: number) => void
  /**
   * A PostgreSQL connection string: from `workerFrom` placemarks on, the rows are read and the index
   * built in a worker thread with a connection of its own, and only the finished index's buffers come
   * back, moved, not copied. The rows' text, the pages' objects and the decoding are the worker's: none
   * of it is garbage in the server's heap or work on its event loop while requests are being served.
   */
  workerUrl?: string
  workerFrom?: number
}

// Placemarks indexed to estimate the index's size before loading it.
const SAMPLE_SIZE = 2000
const STOP_POLL_MS = 50
// The worker's heap holds a page of rows at a time and the shared pieces' dictionary; the index itself is
// in buffers outside it. A small young generation is collected often instead of growing with garbage; the
// old generation may take pages of very long descriptions.
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 1024 }

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
  if (opts.workerUrl !== undefined && count >= (opts.workerFrom ?? 0)) return await buildInWorker(opts.workerUrl, opts)
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

/** What db/box-index-worker.ts is given, and what it answers. */
export interface BoxIndexWorkerInput { url: string; maxBytes: number; pageSize?: number }
export type BoxIndexWorkerAnswer = { kind: 'index'; parts: BoxIndexParts } | { kind: 'too-big'; bytes: number }

function buildInWorker (url: string, opts: BoxIndexLoadOptions): Promise<BoxIndex | null> {
  const workerData: BoxIndexWorkerInput = { url, maxBytes: opts.maxBytes, pageSize: opts.pageSize }
  // The worker loads the same sources through the same TypeScript loader (db/box-index-worker.mjs).
  const worker = new Worker(new URL('./box-index-worker.mjs', import.meta.url),
    { workerData, resourceLimits: WORKER_LIMITS })
  return new Promise((resolve, reject) => {
    let answer: BoxIndexWorkerAnswer | null = null
    let failure: unknown = null
    let stopped = false
    // Stopped, the worker is ended where it stands: its connection goes with it, and PostgreSQL ends the query.
    const poll = setInterval(() => {
      if (stopped || !opts.stop?.()) return
      stopped = true
      void worker.terminate()
    }, STOP_POLL_MS).unref()
    worker.on('message', (a: BoxIndexWorkerAnswer) => { answer = a })
    worker.on('error', (err) => { failure = err })
    // Settled once the worker is gone, its heap with it: the load is over when its memory is given back.
    worker.on('exit', (code) => {
      clearInterval(poll)
      if (stopped) return resolve(null)
      if (failure !== null) return reject(failure)
      if (answer === null) return reject(new Error(`the box index worker exited (code ${code}) without an index`))
      if (answer.kind === 'index') return resolve(BoxIndex.fromParts(answer.parts))
      opts.tooBig?.(answer.bytes)
      resolve(null)
    })
  })
}
