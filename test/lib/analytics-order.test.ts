import t from 'tap'
import { compareBytes, suspicion } from '../../lib/activity/analytics.ts'

t.test('compareBytes is UTF-8 byte order, surrogates and all', async (t) => {
  const words = ['', 'a', 'ab', 'b', '100', '99', '\u00e9', '\uffff', '\ud83d\ude00', '\ue000', 'a\ud83d\ude00', 'a\uffff', 'Z', 'z', '\u0000']
  const byBytes = [...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
  t.same([...words].sort(compareBytes), byBytes)
  for (const a of words) for (const b of words) t.equal(Math.sign(compareBytes(a, b)), Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))), `${JSON.stringify(a)} ${JSON.stringify(b)}`)
})

t.test('the suspicion score rounds exact halves up, whichever way it is computed', async (t) => {
  const base = { typing: 0, messages: 0, deletes: 0, roleChanges: 0, presence: 0, multiClientPresence: 0, reactionsWithLatency: 0, fastReactions: 0, newcomer: false }
  // ghost 1/2 x 25 = 12.5 -> 13
  t.equal(suspicion({ ...base, typing: 1, messages: 1 }).score, 13)
  // ghost 1/3 x 25 = 8.33 -> 8; + fast reactions 1/2 x 10 = 5 -> 13.33 -> 13
  t.equal(suspicion({ ...base, typing: 1, messages: 2, reactionsWithLatency: 2, fastReactions: 1 }).score, 13)
  // Huge counts take the exact path past safe integers and agree with a direct BigInt evaluation.
  const big = { ...base, typing: 2 ** 40 + 1, messages: 2 ** 40 + 1, presence: 2 ** 41, multiClientPresence: 2 ** 40, reactionsWithLatency: 2 ** 39 * 3, fastReactions: 2 ** 39 }
  // 12.5 + 10 + 3.333... = 25.83 -> 26
  t.equal(suspicion(big).score, 26)
  for (let i = 0; i < 2000; i++) {
    const c = { ...base, typing: i % 7, messages: i % 5, deletes: i % 3, roleChanges: i % 6, presence: i % 4, multiClientPresence: i % 4 > 1 ? 1 : 0, reactionsWithLatency: i % 8, fastReactions: (i % 8) >> 1, newcomer: i % 2 === 0 }
    // The exact value in rationals: sum of weight * p / q with a common denominator.
    const terms: [number, number][] = [[25 * c.typing, c.typing + c.messages], [20 * c.multiClientPresence, c.presence], [20 * Math.min(c.deletes, Math.max(c.messages, 1)), Math.max(c.messages, 1)],
      [15 * Math.min(c.roleChanges, 5), 5], [10 * c.fastReactions, c.reactionsWithLatency], [c.newcomer ? 10 : 0, 1]]
    let num = 0n
    let den = 1n
    for (const [p, q] of terms) if (q !== 0) { num = num * BigInt(q) + BigInt(p) * den; den *= BigInt(q) }
    const want = Number((2n * num + den) / (2n * den))
    if (suspicion(c).score !== want) t.fail(`counts ${JSON.stringify(c)}: ${suspicion(c).score} != ${want}`)
  }
  t.pass('2000 mixes agree with the exact rational evaluation')
})
