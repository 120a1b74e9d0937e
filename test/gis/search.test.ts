import t from 'tap'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import { sql } from '../../db/kysely.ts'
import { buildTestApp, dbKinds, openTestDatabase, projectRoot } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { searchCondition } from '../../db/placemarks.ts'

interface Summary { id: number; name: string; description: string | null }

for (const kind of dbKinds) {
  t.test(`text search q on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, { kind, sample: true })
    const app = await buildTestApp(t, handle)
    const all = (await app.inject('/api/v1/placemarks?limit=1000')).json().placemarks as Summary[]
    t.ok(all.length > 20)
    // What q means, written out: every word inside the name or the description, ignoring case (ASCII words here).
    const expected = (q: string) => {
      const words = q.split(/\s+/).filter(Boolean).map((w) => w.toLowerCase())
      return all.filter((p) => words.every((w) => p.name.toLowerCase().includes(w) || (p.description ?? '').toLowerCase().includes(w))).map((p) => p.id)
    }
    const list = async (q: string, extra = '') => ((await app.inject(`/api/v1/placemarks?limit=1000&q=${encodeURIComponent(q)}${extra}`)).json().placemarks as Summary[]).map((p) => p.id)
    const items = async (q: string) => ((await app.inject(`/ogc/collections/placemarks/items?limit=10000&q=${encodeURIComponent(q)}`)).json().features as { id: number }[]).map((f) => f.id)

    for (const q of ['tropicana', 'TROPICANA', 'las vegas', 'Vegas  strip', 'stage festival', 'boulevard traffic', 'a', 'zz-no-such-word', '%', '_', '\\', '10/1/2017', '   ']) {
      const want = expected(q)
      t.same(await list(q), want, `/api/v1/placemarks q=${JSON.stringify(q)}: ${want.length}`)
      t.same(await items(q), want, `OGC items q=${JSON.stringify(q)}`)
    }
    t.ok(expected('tropicana').length >= 2, 'the sample has several Tropicana placemarks')
    t.ok(expected('las vegas').length < all.length, 'two words narrow the list')

    // A word of the description alone, and words split between the name and the description.
    const described = all.find((p) => p.description && /[a-z]{6,}/i.test(p.description))!
    const word = described.description!.match(/[a-z]{6,}/i)![0]
    t.ok((await list(word)).includes(described.id), `a word of the description (${word}) finds the placemark`)
    const nameWord = described.name.match(/[a-z]{4,}/i)?.[0]
    if (nameWord) t.ok((await list(`${nameWord} ${word}`)).includes(described.id), 'one word from the name and one from the description')

    // With the other filters; and the self link keeps q.
    const inStrip = new Set(((await app.inject('/api/v1/placemarks?limit=1000&folder=Las%20Vegas%20Strip')).json().placemarks as Summary[]).map((p) => p.id))
    const both = expected('vegas').filter((id) => inStrip.has(id))
    t.ok(both.length > 0 && both.length < expected('vegas').length, 'folder and q narrow each other')
    t.same(await list('vegas', '&folder=Las%20Vegas%20Strip'), both)
    const page = (await app.inject('/ogc/collections/placemarks/items?limit=1&q=tropicana')).json()
    t.match(page.links.find((l: { rel: string }) => l.rel === 'next').href, /q=tropicana/)
    t.equal(page.numberMatched, expected('tropicana').length)

    // Index-backed: with sequential scans off, the plan reads the trigram index.
    const plan = await handle.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL enable_seqscan = off`.execute(trx)
      const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT p.id FROM placemarks p WHERE ${searchCondition(['tropicana', 'avenue'])}`.execute(trx)
      return rows.map((r) => r['QUERY PLAN']).join('\n')
    })
    t.match(plan, /placemarks_search_idx/, plan)

    t.equal((await app.inject('/api/v1/placemarks?q=' + 'x'.repeat(501))).statusCode, 400, 'q of more than 500 characters')
  })
}

t.test('an import builds the search index on its new table', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  await importPlacemarks(handle, createReadStream(join(projectRoot, 'test/fixtures/small.kml')), { timeZone: 'UTC', source: 'small.kml' })
  const { rows } = await sql<{ indexname: string }>`SELECT indexname FROM pg_indexes WHERE tablename = 'placemarks' ORDER BY indexname`.execute(handle.db)
  t.ok(rows.some((r) => r.indexname === 'placemarks_search_idx'), rows.map((r) => r.indexname).join(', '))
})
