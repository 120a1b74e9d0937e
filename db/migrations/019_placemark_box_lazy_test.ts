import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'
import { boundsMeet, boxAnswerFunction, shapeMeets, SMALL_BOX_ANSWER } from './018_placemark_box_function.ts'

// Boxes narrower than this (degrees, both sides) take the path below: at the bench's densest 1M
// placemarks one holds at most a few thousand candidates.
const SMALL = 0.1

/**
 * A small box's exact test only as far as the answer needs it. The GiST index's candidates whose
 * bounds meet the box are sorted by id (the first `2 × lim` of them, a bounded top-N sort), and the
 * geometry test (placemark_shape_intersects, PL/pgSQL) runs on them in that order until `lim` placemarks
 * have passed; before, it ran on every candidate and the sort came after. A city box of the bench (0.04°,
 * about 400 candidates, `limit=100`) then costs PostgreSQL about a fifth less (pgbench, one client:
 * 0.81–0.82 ms against 0.95–1.18). When fewer than `lim` pass (a box with fewer placemarks, or more
 * than `lim` of the first candidates failing the test), the whole statement of migration 018 answers.
 * Sorting by `id + 0` keeps the planner from walking the id index instead (it cannot tell how few rows
 * a box holds); larger boxes keep migration 018's statement, for which the planner makes that choice
 * (a dense 0.9° box with 83,000 candidates: 69 ms there, 92–107 ms through this path).
 */
const LAZY = `
      SELECT string_agg(s.summary, ',' ORDER BY s.id), count(*)::integer INTO summaries, n
      FROM (
        SELECT c.id, c.summary FROM (
          SELECT p.id + 0 AS k, p.id, p.summary, p.shape, p.min_lon, p.min_lat, p.max_lon, p.max_lat FROM placemarks p
          WHERE ${boundsMeet('x0', 'y0', 'x1', 'y1', true)}
          ORDER BY k LIMIT 2 * lim
        ) c
        WHERE ${shapeMeets('x0', 'y0', 'x1', 'y1', 'c')}
        ORDER BY c.k LIMIT lim
      ) s;`

/**
 * The small-box branch of placemark_box_answer around a lazy statement: that statement for boxes under
 * SMALL a side, then migration 018's whole statement when it finds fewer than `lim`; 018's statement for
 * the others. Migration 020 gives it another lazy statement.
 */
export function smallBoxBranch (lazy: string): string {
  return `IF x1 - x0 < ${SMALL} AND y1 - y0 < ${SMALL} THEN
        ${lazy}
          IF n < lim THEN
            ${SMALL_BOX_ANSWER}
          END IF;
        ELSE
          ${SMALL_BOX_ANSWER}
        END IF;`
}

export const LAZY_FUNCTION = boxAnswerFunction('CREATE OR REPLACE', smallBoxBranch(LAZY))

export async function up (db: Kysely<unknown>): Promise<void> {
  await sql.raw(LAZY_FUNCTION).execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql.raw(boxAnswerFunction('CREATE OR REPLACE')).execute(db)
}
