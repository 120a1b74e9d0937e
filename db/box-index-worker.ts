// A worker thread's entry (db/box-index-load.ts): reads the placemarks over a connection of its own,
// orders them, builds the box index and hands its buffers to the thread that started it. Its connection
// has no statement timeout: ordering ten million placemarks takes longer than a request may.
import { parentPort, workerData } from 'node:worker_threads'
import { transferList } from '../lib/geo/box-index.ts'
import { buildBoxIndex, type BoxIndexWorkerAnswer, type BoxIndexWorkerInput } from './box-index-load.ts'
import { openPostgres } from './postgres.ts'

const input = workerData as BoxIndexWorkerInput
const handle = openPostgres({ url: input.url, poolMax: 1 })
try {
  let bytes = 0
  const index = await buildBoxIndex(handle.db, { maxBytes: input.maxBytes, pageSize: input.pageSize, tooBig: (needed) => { bytes = needed } })
  if (index) {
    const parts = index.toParts()
    parentPort!.postMessage({ kind: 'index', parts } satisfies BoxIndexWorkerAnswer, transferList(parts))
  } else {
    parentPort!.postMessage({ kind: 'too-big', bytes } satisfies BoxIndexWorkerAnswer)
  }
} finally {
  await handle.close()
}
