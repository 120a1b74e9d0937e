import type { Kysely } from 'kysely'
import { sql } from '../kysely.ts'

// The bounds of row `p` meeting one planar half of the box (x0..x1, y0..y1): the GiST index's candidates
// (its `&&` allows PostgreSQL's 1e-6 of slack), then the exact test on the bounds' float8 corners.
// Without `&&` when the box holds every placemark (the id index is walked instead).
export function boundsMeet (x0: string, y0: string, x1: string, y1: string, candidates: boolean, p = 'p'): string {
  const overlap = candidates ? `${p}.bbox && box(point(${x1}, ${y1}), point(${x0}, ${y0})) AND ` : ''
  return `${overlap}${p}.min_lon <= ${x1} AND ${p}.max_lon >= ${x0} AND ${p}.min_lat <= ${y1} AND ${p}.max_lat >= ${y0}`
}

// Whether the geometry of row `p`, whose bounds meet the box, meets it: the geometry's own test only for
// the rows whose bounds cross the box's edge (a point's bounds, or bounds inside the box, decide by
// themselves).
export function shapeMeets (x0: string, y0: string, x1: string, y1: string, p = 'p'): string {
  return `(${p}.shape IS NULL
          OR (${p}.min_lon >= ${x0} AND ${p}.max_lon <= ${x1} AND ${p}.min_lat >= ${y0} AND ${p}.max_lat <= ${y1})
          OR placemark_shape_intersects(${p}.shape, ${x0}, ${y0}, ${x1}, ${y1}))`
}

// One planar half of the box: the bounds, then the geometry.
export function inHalf (x0: string, y0: string, x1: string, y1: string, candidates: boolean): string {
  return `(${boundsMeet(x0, y0, x1, y1, candidates)}
        AND ${shapeMeets(x0, y0, x1, y1)})`
}

// The first `lim` placemarks of `source` meeting the condition, in id order, their stored summaries
// joined by commas.
export const answer = (where: string, source = 'placemarks') => `
      SELECT string_agg(s.summary, ',' ORDER BY s.id), count(*)::integer INTO summaries, n
      FROM (SELECT p.id, p.summary FROM ${source} p WHERE ${where} ORDER BY p.id LIMIT lim) s;`

// The same answer for a large box, decided from the GiST index alone (an index-only scan: the bounds are
// the indexed \`bbox\`, its corners the exact float8 ones, and \`id\` is included), the candidates' ids
// sorted, and only the first \`lim\` rows read from the table; a row is read for its geometry only when
// its bounds cross the box's edge. Reading and sorting every candidate row instead took 267 ms for a box
// over the USA at 1M placemarks (this: 114 ms), and seconds at 10M where the rows are not in memory.
const LARGE_ANSWER = `
      SELECT string_agg(q.summary, ',' ORDER BY q.id), count(*)::integer INTO summaries, n
      FROM (
        SELECT c.id FROM placemarks c
        WHERE c.bbox && box(point(x1, y1), point(x0, y0))
          AND (c.bbox[1])[0] <= x1 AND (c.bbox[0])[0] >= x0 AND (c.bbox[1])[1] <= y1 AND (c.bbox[0])[1] >= y0
          AND (((c.bbox[1])[0] >= x0 AND (c.bbox[0])[0] <= x1 AND (c.bbox[1])[1] >= y0 AND (c.bbox[0])[1] <= y1)
            OR (SELECT g.shape IS NULL OR placemark_shape_intersects(g.shape, x0, y0, x1, y1) FROM placemarks g WHERE g.id = c.id))
        ORDER BY c.id LIMIT lim
      ) k JOIN placemarks q ON q.id = k.id;`

// The answer to a box under a degree a side, as this migration makes it.
export const SMALL_BOX_ANSWER = answer(inHalf('x0', 'y0', 'x1', 'y1', true))

/**
 * The statement that makes `placemark_box_answer` (`CREATE` or `CREATE OR REPLACE`), with `small` the
 * statements that answer a box under a degree a side (migration 019 gives it others).
 */
export function boxAnswerFunction (create: 'CREATE' | 'CREATE OR REPLACE', small: string = SMALL_BOX_ANSWER): string {
  return `
    -- PARALLEL RESTRICTED: it changes a setting (set_config) for the length of the call.
    ${create} FUNCTION placemark_box_answer (x0 float8, y0 float8, x1 float8, y1 float8, lim integer,
      OUT summaries text, OUT n integer)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SET jit = off SET enable_bitmapscan = on AS $$
    BEGIN
      IF x0 > x1 THEN
        ${answer(`(${inHalf('x0', 'y0', '180', 'y1', true)}\n        OR ${inHalf('-180', 'y0', 'x1', 'y1', true)})`)}
      ELSIF x1 - x0 >= 1 OR y1 - y0 >= 1 THEN
        IF placemark_box_holds_all(x0, y0, x1, y1) THEN
          ${answer(inHalf('x0', 'y0', 'x1', 'y1', false))}
        ELSE
          -- The first rows in id order, at most ten times the limit of them: enough when the box holds
          -- a large share of the placemarks (the answer is then the first \`lim\` of those that pass).
          ${answer(inHalf('x0', 'y0', 'x1', 'y1', false),
            '(SELECT id, summary, shape, min_lon, min_lat, max_lon, max_lat FROM placemarks ORDER BY id LIMIT lim * 10)')}
          IF n < lim THEN
            -- The planner would read the candidates' rows through a bitmap (it estimates every box at
            -- 0.5 % of the rows); this statement's plan is made, and kept, without that choice (the
            -- function's own SET restores the setting when it returns).
            PERFORM set_config('enable_bitmapscan', 'off', true);
            ${LARGE_ANSWER}
          END IF;
        END IF;
      ELSE
        ${small}
      END IF;
      summaries := coalesce(summaries, '');
    END
    $$`
}

/**
 * The box query as two functions, so that a box costs one round trip and PostgreSQL plans its
 * statements once per connection (PL/pgSQL keeps their plans; a statement sent as text is planned on every
 * request: 1,000 city boxes at 1M placemarks in a loop in the database took 0.78 ms each planned every
 * time, 0.48 ms with the plan kept):
 *
 * - `placemark_box_holds_all(x0, y0, x1, y1)`: whether no placemark's bounds reach past a side of the box
 *   by more than the 1e-6 of slack in `&&`: four GiST probes of the strips past its sides, each stopping
 *   at its first row.
 * - `placemark_box_answer(x0, y0, x1, y1, lim)`: the placemarks intersecting the box (planar
 *   ST_Intersects, boundary inclusive; x0 > x1 crosses the antimeridian and is asked as its two halves),
 *   the first `lim` in id order: their stored summaries joined by commas, and how many. The planner
 *   estimates every `box && box` at 0.5 % of the rows and would take the GiST path for the whole world
 *   too, reading and sorting every row; so a box of a degree or more is first asked whether it holds
 *   every placemark, and if so the id index is walked, which reads `lim` rows; if not, the first
 *   `10 × lim` rows in id order are tried (a box holding a large share of the placemarks finds its
 *   answer there), and failing that it is answered from the GiST index alone (LARGE_ANSWER above).
 *   JIT is off for it: past several million placemarks the estimate of any box passes
 *   `jit_above_cost`, and compiling took 32 ms of a city box's 37 at 10M, where the statement itself
 *   needs 5.
 */
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION placemark_box_holds_all (x0 float8, y0 float8, x1 float8, y1 float8) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN NOT (EXISTS (SELECT 1 FROM placemarks WHERE bbox && box(point('-Infinity', '-Infinity'), point(x0 - 2e-6, 'Infinity')))
        OR EXISTS (SELECT 1 FROM placemarks WHERE bbox && box(point(x1 + 2e-6, '-Infinity'), point('Infinity', 'Infinity')))
        OR EXISTS (SELECT 1 FROM placemarks WHERE bbox && box(point('-Infinity', '-Infinity'), point('Infinity', y0 - 2e-6)))
        OR EXISTS (SELECT 1 FROM placemarks WHERE bbox && box(point('-Infinity', y1 + 2e-6), point('Infinity', 'Infinity'))));
    END
    $$`.execute(db)
  await sql.raw(boxAnswerFunction('CREATE')).execute(db)
}

export async function down (db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION placemark_box_answer(float8, float8, float8, float8, integer)`.execute(db)
  await sql`DROP FUNCTION placemark_box_holds_all(float8, float8, float8, float8)`.execute(db)
}
