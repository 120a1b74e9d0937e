import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { createPostgresDatabase } from '../helper.ts'
import { openDatabase } from '../../db/index.ts'

// A command (the import's lanes) may use the pool's own clients and never a Kysely query: closing the
// handle must end the pool all the same, or its idle clients' timers keep the process alive for 30 s.
t.test('postgres: closing the handle ends its pool when only the pool\'s own clients were used', async (t) => {
  const url = await createPostgresDatabase(t, { migrated: false })
  const handle = await openDatabase({ url })
  const client = await handle.pool.connect()
  await client.query('SELECT 1')
  client.release()
  t.equal(handle.pool.idleCount, 1, 'an idle client, with its idle timer')
  await handle.close()
  t.ok(handle.pool.ended, 'the pool is ended')
  t.equal(handle.pool.totalCount, 0, 'no client left')
  await handle.close()
  t.pass('a second close is harmless')
})

t.test('postgres: closing the handle after Kysely queries ends the pool once', async (t) => {
  const url = await createPostgresDatabase(t, { migrated: false })
  const handle = await openDatabase({ url })
  await sql`SELECT 1`.execute(handle.db)
  const client = await handle.pool.connect()
  client.release()
  await handle.close()
  t.ok(handle.pool.ended)
  t.equal(handle.pool.totalCount, 0)
})
