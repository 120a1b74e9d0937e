import t from 'tap'
import { packNumbers, unpackNumbers, writeDecimal } from '../../lib/geo/record-numbers.ts'
import { mulberry32 } from '../../lib/random.ts'

// The packed text must come back byte for byte, whatever the text: numbers that pack, numbers that
// must not (leading zeros, exponents, too many digits) and the text around them.
const roundTrip = (text: string): string | null => {
  const packed = packNumbers(text, 0)
  if (packed === null) return null
  const out = Buffer.alloc(text.length * 2 + 16)
  return out.toString('latin1', 0, unpackNumbers(packed, 0, packed.length, out, 0))
}

t.test('coordinates come back byte for byte, in fewer bytes', async (t) => {
  const text = '[-115.123456,36.123456]'
  t.equal(roundTrip(text), text)
  t.equal(packNumbers(text)!.length, 13, '23 bytes in 13')
  const line = '[[1.5,2],[1.25,2.125],[-3e-7,1e21],[0,-0],[0.0,-0.0],[100,007],[123456789012345,1234567890123456],[1.23456789012345,0.000001]]'
  t.equal(roundTrip(line), line)
  t.equal(roundTrip('1.5.3 12.34e5 12.34E+5 -.5 5. 1..2 --3 9999999999999999999 0.000000000000001'), '1.5.3 12.34e5 12.34E+5 -.5 5. 1..2 --3 9999999999999999999 0.000000000000001')
})

t.test('random texts of digits, points, signs and brackets', async (t) => {
  const rand = mulberry32(5)
  const alphabet = '0123456789.-,[]eE +0123456789'
  let packedSome = 0
  for (let k = 0; k < 20_000; k++) {
    const length = 1 + Math.floor(rand() * 40)
    let text = ''
    for (let c = 0; c < length; c++) text += alphabet[Math.floor(rand() * alphabet.length)]
    const back = roundTrip(text)
    if (back !== null && back !== text) return t.fail(`${JSON.stringify(text)} came back as ${JSON.stringify(back)}`)
    if (back !== null && packNumbers(text) !== null) packedSome++
  }
  t.ok(packedSome > 1000, `${packedSome} texts packed`)
  // Random coordinates as JSON writes them.
  for (let k = 0; k < 20_000; k++) {
    const scale = 10 ** Math.floor(rand() * 12)
    const text = JSON.stringify([(rand() - 0.5) * 360 * (rand() < 0.5 ? 1 : 1 / scale), Math.round((rand() - 0.5) * 180 * scale) / scale])
    if (roundTrip(text) !== text) return t.fail(`${text} came back as ${roundTrip(text)}`)
  }
})

t.test('text that is not ASCII, or saves nothing, is not packed', async (t) => {
  t.equal(packNumbers('[1.5,2] é'), null)
  t.equal(packNumbers('[1,2]'), null)
  t.equal(packNumbers('abc'), null)
})

t.test('decimals as integers with a point', async (t) => {
  const out = Buffer.alloc(32)
  const write = (v: number, decimals?: number) => out.toString('latin1', 0, writeDecimal(out, 0, v, decimals))
  t.equal(write(0), '0')
  t.equal(write(4294967295), '4294967295')
  t.equal(write(5, 3), '0.005')
  t.equal(write(0, 2), '0.00')
  t.equal(write(123456789012345, 15), '0.123456789012345')
  t.equal(write(999999999999999, 1), '99999999999999.9')
})
