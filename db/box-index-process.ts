// The box index's builder process (db/box-index-load.ts): reads its input (a connection string, the
// index's size limit and a file's path, JSON) from stdin, reads the placemarks over a connection of its
// own, builds the index, writes the bytes of its one buffer (lib/geo/box-index-wire.ts) to the file and
// then a header line (JSON) to stdout. Its connection has no statement timeout: ordering ten million placemarks
// takes longer than a request may. Everything it allocated goes back to the system when it exits.
import { rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { text } from 'node:stream/consumers'
import { toWire } from '../lib/geo/box-index-wire.ts'
import { buildBoxIndex, type BoxIndexProcessHeader, type BoxIndexProcessInput } from './box-index-load.ts'
import { openPostgres } from './postgres.ts'

const ORPHAN_POLL_MS = 1000

const write = (chunk: string) => new Promise<void>((resolve, reject) => process.stdout.write(chunk, (err) => (err ? reject(err) : resolve())))

const input = JSON.parse(await text(process.stdin)) as BoxIndexProcessInput
// A server gone without stopping it (killed, crashed) leaves the builder to another parent: then it
// removes its directory and exits rather than build an index nobody will read (checked every second,
// and before the index is written).
const orphaned = () => {
  if (process.ppid === input.server) return
  rmSync(dirname(input.path), { recursive: true, force: true })
  process.exit(1)
}
setInterval(orphaned, ORPHAN_POLL_MS).unref()
const handle = openPostgres({ url: input.url, poolMax: 1 })
try {
  let bytes = 0
  const index = await buildBoxIndex(handle.db, { maxBytes: input.maxBytes, pageSize: input.pageSize, tooBig: (needed) => { bytes = needed } })
  if (index) {
    const wire = toWire(index.toParts())
    orphaned()
    await writeFile(input.path, wire.bytes)
    await write(`${JSON.stringify({ kind: 'index', parts: wire.header, byteLength: wire.bytes.byteLength } satisfies BoxIndexProcessHeader)}\n`)
  } else {
    await write(`${JSON.stringify({ kind: 'too-big', bytes } satisfies BoxIndexProcessHeader)}\n`)
  }
} catch (err) {
  // Its message alone, for the server's error (a driver's message names no password).
  process.stderr.write((err as Error).message)
  process.exitCode = 1
} finally {
  await handle.close()
}
