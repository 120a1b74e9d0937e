import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'
import { boundsMeet, boxAnswerFunction, shapeMeets } from './018_placemark_box_function.ts'
import { LAZY_FUNCTION, smallBoxBranch } from './019_placemark_box_lazy_test.ts'

/**
 * A small box's candidates from the GiST index alone. Migration 019 read every candidate's row to test
 * its bounds before sorting them by id: a city box of the bench holds about 400 candidates at 1M
 * placemarks, and 4,000 at 10M, where their rows sit on some 550 pages that mostly are not in shared
 * buffers. Now the index's own entries (its `bbox` and the `id` it includes) give the first `2 × lim`
 * candidates by id in an index-only scan, and only those rows are read, through the primary key, in id
 * order, until `lim` have passed the exact tests (bounds, then geometry); when fewer pass, migration
 * 018's whole statement answers, as before. A candidate of `&&`'s 1e-6 of slack takes a place among the
 * `2 × lim` and fails the exact bounds test, which at worst sends the box to the whole statement.
 *
 * An index-only scan reads the row only for a page the visibility map does not mark all-visible: the
 * import vacuums the table once it is swapped in (db/placemark-import.ts), and without that this
 * statement reads every candidate's row, as 019's did. pgbench, one client, random city boxes, 10M
 * placemarks: 2.1–2.2 ms a box against 4.9–5.0 ms; at 1M, 0.78–0.81 ms against 0.78–0.84.
 */
const INDEX_ONLY = `
      SELECT string_agg(s.summary, ',' ORDER BY s.id), count(*)::integer INTO summaries, n
      FROM (
        SELECT q.id, q.summary FROM (
          SELECT c.id + 0 AS k, c.id FROM placemarks c
          WHERE c.bbox && box(point(x1, y1), point(x0, y0))
          ORDER BY k LIMIT 2 * lim
        ) c JOIN placemarks q ON q.id = c.id
        WHERE ${boundsMeet('x0', 'y0', 'x1', 'y1', false, 'q')}
          AND ${shapeMeets('x0', 'y0', 'x1', 'y1', 'q')}
        ORDER BY c.k LIMIT lim
      ) s;`

export async function up (db: Kysely<unknown>): Promise<void> {
  await sql.raw(boxAnswerFunction('CREATE OR REPLACE', smallBoxBranch(INDEX_ONLY))).execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql.raw(LAZY_FUNCTION).execute(db)
}
