/**
 * The suspicion score as the database computes it (db/analytics.ts SUSPICION_SCORE) against the exact
 * score of lib/activity/analytics.ts, on both databases: small counts (where sums of exactly x.5 are
 * common), sums a hair off a half, and counts so large that the exact sum leaves int8 for numeric.
 */
import t from 'tap'
import { sql } from '../../db/kysely.ts'
import { dbKinds, openTestDatabase } from '../helper.ts'
import { SUSPICION_SCORE, suspicionFloatSum } from '../../db/analytics.ts'
import { suspicion, type SuspicionCounts } from '../../lib/activity/analytics.ts'
import { mulberry32 } from '../../lib/random.ts'

type Row = [t: number, m: number, d: number, rc: number, p: number, pm: number, rl: number, rf: number, nc: 0 | 1]

const counts = ([t, m, d, rc, p, pm, rl, rf, nc]: Row): SuspicionCounts => ({
  typing: t, messages: m, deletes: d, roleChanges: rc, presence: p, multiClientPresence: pm, reactionsWithLatency: rl, fastReactions: rf, newcomer: nc === 1
})

function cases (): Row[] {
  const random = mulberry32(11)
  const int = (n: number) => Math.floor(random() * n)
  const rows: Row[] = [
    [0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 1, 0, 0, 0, 0, 0, 0, 0], // 12.5: an exact half
    [1, 1, 0, 0, 0, 0, 0, 0, 1],
    [1, 3, 0, 1, 2, 1, 2, 1, 0],
    // Every count past 10^5: the common denominator passes 4e16, and the exact sum is taken in numeric.
    // A denominator just under 4e16 with every factor at its largest: int8's largest exact sums (67.5 + 10).
    [10_000, 10_000, 10_000, 5, 20_000, 10_000, 9_999, 9_999, 1],
    [100_001, 100_001, 0, 0, 200_000, 100_000, 100_000, 50_000, 0],
    [150_001, 150_001, 3, 7, 300_001, 150_000, 999_999, 499_999, 1],
    [2_000_000_000, 2_000_000_000, 2_000_000_000, 5, 2_000_000_000, 1_000_000_000, 2_000_000_000, 1_000_000_000, 1]
  ]
  for (let i = 0; i < 400; i++) {
    // Small counts: exact halves are frequent.
    const m = int(6)
    const p = int(5)
    const rl = int(5)
    rows.push([int(6), m, int(m + 2), int(8), p, int(p + 1), rl, int(rl + 1), int(2) as 0 | 1])
  }
  for (let i = 0; i < 200; i++) {
    // Large counts of every size up to int4, denominators on both sides of 4e16.
    const big = () => int(10 ** (1 + int(9)))
    const m = big()
    const p = big()
    const rl = big()
    rows.push([big(), m, int(m + 1), int(9), p, int(p + 1), rl, int(rl + 1), int(2) as 0 | 1])
  }
  return rows
}

for (const kind of dbKinds) {
  t.test(`the score in ${kind}: the exact score of every member, halves rounded up`, async (t) => {
    const db = (await openTestDatabase(t, kind)).db
    const rows = cases()
    const values = sql.join(rows.map((r, i) => sql`(${i}::int, ${sql.join(r.slice(0, 8).map((c) => sql`${c}::int8`))}, ${r[8]}::int)`))
    const { rows: scored } = await sql<{ i: number; score: number }>`
      SELECT i, ${sql.raw(SUSPICION_SCORE)} AS score FROM (
        SELECT v.*, ${sql.raw(suspicionFloatSum((c) => c))} AS f FROM (VALUES ${values}) v(i, t, m, d, rc, p, pm, rl, rf, nc)
      ) x ORDER BY i`.execute(db)
    const wrong = scored.filter((s) => s.score !== suspicion(counts(rows[s.i]!)).score)
    t.same(wrong.map((s) => ({ counts: rows[s.i], sql: s.score, exact: suspicion(counts(rows[s.i]!)).score })), [], `${rows.length} members, every score exact`)
    // The double sum of the factors but newcomer, as SQL takes it: near a half, the exact branch decides.
    const near = rows.filter(([t, m, d, rc, p, pm, rl, rf]) => {
      const f = (t + m > 0 ? 25 * t / (t + m) : 0) + (p > 0 ? 20 * pm / p : 0) + 20 * Math.min(d, Math.max(m, 1)) / Math.max(m, 1) +
        3 * Math.min(rc, 5) + (rl > 0 ? 10 * rf / rl : 0)
      return Math.abs(f - Math.floor(f) - 0.5) <= 1e-9
    })
    t.ok(near.length >= 20, `${near.length} sums within 1e-9 of a half`)
    const big = near.filter((r) => Math.max(r[0] + r[1], 1) * Math.max(r[4], 1) * Math.max(r[1], 1) * Math.max(r[6], 1) >= 4e16)
    t.ok(big.length >= 1 && big.length < near.length, `${big.length} of them in numeric, the others in int8`)
  })
}
