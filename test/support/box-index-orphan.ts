// A server that dies while its box index is being built (test/routes/bbox-index.test.ts): it starts the
// builder process on the database at argv[2] and is killed 200 ms after the builder's directory is made
// (the builder started and given its input, still loading its modules or reading pages of one placemark).
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { loadBoxIndex } from '../../db/box-index-load.ts'
import { openPostgres } from '../../db/postgres.ts'

const url = process.argv[2]!
const handle = openPostgres({ url, poolMax: 1 })
void loadBoxIndex(handle.db, { maxBytes: 1 << 20, workerUrl: url, workerFrom: 0, pageSize: 1 })
const poll = setInterval(() => {
  if (!readdirSync(tmpdir()).some((name) => name.startsWith('box-index-'))) return
  clearInterval(poll)
  setTimeout(() => process.stdout.write('building\n', () => process.kill(process.pid, 'SIGKILL')), 200)
}, 5)
