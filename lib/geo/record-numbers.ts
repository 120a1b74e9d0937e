// Decimal numbers in the box index's records (lib/geo/box-index.ts) as binary: a geometry's coordinates
// in its summary's text (`[-115.123456,36.123456]`, 23 bytes) take 13 bytes, the same text coming back
// byte for byte. Numbers are the bulk of a placemark's record that no other placemark shares.
//
// A packed text is a sequence of bytes: one below 0x80 is itself (ASCII, copied), one from 0x80 on is a
// number: its low four bits the digits after the point (0 to 15), bit 4 a minus sign, then the digits
// as one integer (7 bits a byte, low first). Only numbers written the one way that gives them back
// (no leading zero, no exponent, at most 15 digits) are packed; any other text stays as it is.

const NUMBER = 0x80
const MINUS = 0x10
const MAX_DIGITS = 15
const DIGIT_0 = 0x30
const DOT = 0x2e
const DASH = 0x2d

const isDigit = (c: number): boolean => c >= DIGIT_0 && c <= DIGIT_0 + 9

/**
 * The text packed, or null when that would not save at least `minSaving` bytes or the text is not ASCII
 * (the caller keeps it as it is then).
 */
export function packNumbers (text: string, minSaving = 4): Buffer | null {
  const n = text.length
  const out = Buffer.allocUnsafe(n + 1)
  let o = 0
  let k = 0
  while (k < n) {
    const c = text.charCodeAt(k)
    if (c >= 0x80) return null
    const end = numberEnd(text, k)
    if (end === -1) {
      out[o++] = c
      k++
      continue
    }
    const negative = c === DASH
    const dot = text.indexOf('.', k)
    const digits = text.slice(negative ? k + 1 : k, end).replace('.', '')
    const decimals = dot !== -1 && dot < end ? end - dot - 1 : 0
    // Digits worth packing: one or two plain digits (`0`, `12`) are as short as text.
    if (end - k < 3) {
      for (; k < end; k++) out[o++] = text.charCodeAt(k)
      continue
    }
    out[o++] = NUMBER | (negative ? MINUS : 0) | decimals
    let v = Number(digits)
    while (v >= 0x80) {
      out[o++] = (v % 0x80) | 0x80
      v = Math.floor(v / 0x80)
    }
    out[o++] = v
    k = end
  }
  if (n - o < minSaving) return null
  return out.subarray(0, o)
}

/**
 * Where the number starting at text[k] ends, when it is one that packs: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`
 * of at most MAX_DIGITS digits, not followed by another digit, a point or an exponent, nor preceded by a
 * digit or a point (it would be the tail of some other token). -1 otherwise.
 */
function numberEnd (text: string, k: number): number {
  const before = k > 0 ? text.charCodeAt(k - 1) : 0
  if (isDigit(before) || before === DOT) return -1
  let at = k
  if (text.charCodeAt(at) === DASH) at++
  const first = text.charCodeAt(at)
  if (!isDigit(first)) return -1
  at++
  if (first !== DIGIT_0) while (isDigit(text.charCodeAt(at))) at++
  let digits = at - k - (text.charCodeAt(k) === DASH ? 1 : 0)
  if (text.charCodeAt(at) === DOT) {
    const from = ++at
    while (isDigit(text.charCodeAt(at))) at++
    if (at === from) return -1
    digits += at - from
  }
  const next = text.charCodeAt(at)
  if (isDigit(next) || next === DOT || next === 0x65 || next === 0x45) return -1
  return digits <= MAX_DIGITS ? at : -1
}

/** Writes the text packed at source[start, end) at target[at]; returns its length. */
export function unpackNumbers (source: Uint8Array, start: number, end: number, target: Uint8Array, at: number): number {
  let o = at
  let k = start
  while (k < end) {
    const c = source[k++]
    if (c < NUMBER) {
      target[o++] = c
      continue
    }
    let v = source[k++]
    if (v >= 0x80) {
      v &= 0x7f
      for (let scale = 0x80; ; scale *= 0x80) {
        const b = source[k++]
        v += (b & 0x7f) * scale
        if (b < 0x80) break
      }
    }
    if (c & MINUS) target[o++] = DASH
    o += writeDecimal(target, o, v, c & 0x0f)
  }
  return o - at
}

/** Writes the integer v (at most 2^53) with its last `decimals` digits after a point, at target[at]; returns its length. */
export function writeDecimal (target: Uint8Array, at: number, v: number, decimals = 0): number {
  let digits = 1
  for (let p = 10; p <= v; p *= 10) digits++
  if (digits <= decimals) digits = decimals + 1
  const length = decimals ? digits + 1 : digits
  let o = at + length
  for (let d = 0; d < digits; d++) {
    if (decimals && d === decimals) target[--o] = DOT
    const digit = v % 10
    target[--o] = DIGIT_0 + digit
    v = (v - digit) / 10
  }
  return length
}
