import { isUtf8 } from 'node:buffer'

/**
 * Turns the raw bytes of a KML file into text, in the encoding the file declares.
 *
 * The encoding is taken from a byte order mark (UTF-8, UTF-16LE, UTF-16BE), else from UTF-16 text
 * without one (`<?` as two-byte units), else from the XML declaration's `encoding`, else UTF-8.
 * Accepted: UTF-8 (and US-ASCII, read as UTF-8), UTF-16, ISO-8859-1 (exactly: bytes are code
 * points), and every other encoding of the WHATWG Encoding Standard (windows-1252, ISO-8859-x,
 * KOI8, Shift_JIS, GBK, Big5, ...). Anything else is refused with a DecodeError naming it.
 *
 * Bytes that are not valid in the encoding become U+FFFD and are counted, with the line of the
 * first, rather than failing the file or disappearing silently.
 */

export class DecodeError extends Error {
  override name = 'DecodeError'
}

export interface DecodeReport {
  // The encoding the file is read in (a canonical lower-case name), null until known.
  encoding: string | null
  // Byte sequences that were not valid in that encoding (each replaced by U+FFFD).
  invalidSequences: number
  // The line of the first of them.
  firstInvalidLine: number | null
}

// The XML declaration must end within this many bytes of the start (it is normally about 40).
const DECLARATION_MAX_BYTES = 1024
// Bytes looked at before deciding when the file may start with a declaration.
const SNIFF_BYTES = 16

const LATIN1_LABELS = new Set(['iso-8859-1', 'iso8859-1', 'iso_8859-1', 'iso88591', 'latin1', 'l1', 'iso-ir-100', 'cp819', 'ibm819', 'csisolatin1', 'iso_8859-1:1987'])
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'us-ascii', 'ascii', 'ansi_x3.4-1968', 'iso646-us'])
const UTF16_LABELS = new Set(['utf-16', 'utf16', 'utf-16le', 'utf-16be', 'ucs-2', 'unicode', 'csunicode', 'iso-10646-ucs-2'])

const ENCODING_IN_DECLARATION = /^<\?xml\s[^?]*?\bencoding\s*=\s*(["'])([^"']*)\1/

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const HAS_LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Newlines (LF, or CR not followed by LF) in bytes [from, to). */
function countNewlines (bytes: Uint8Array, from: number, to: number): number {
  let n = 0
  for (let i = from; i < to; i++) {
    const b = bytes[i]
    if (b === 0x0a || (b === 0x0d && bytes[i + 1] !== 0x0a)) n++
  }
  return n
}

function countNewlinesIn (text: string, to: number): number {
  let n = 0
  for (let i = text.indexOf('\n'); i >= 0 && i < to; i = text.indexOf('\n', i + 1)) n++
  return n
}

/** Length of the incomplete UTF-8 sequence at the end of bytes (0..3), to be completed by the next chunk. */
function incompleteTail (bytes: Uint8Array): number {
  const n = bytes.length
  for (let back = 1; back <= 3 && back <= n; back++) {
    const b = bytes[n - back]
    if ((b & 0xc0) === 0x80) continue
    const need = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xc2 && b <= 0xdf ? 2 : 1
    return need > back ? back : 0
  }
  return 0
}

/**
 * Invalid UTF-8 sequences in bytes, counted the way a decoder replaces them (one U+FFFD per maximal
 * invalid subpart), and the offset of the first.
 */
function scanUtf8 (bytes: Uint8Array): { count: number; first: number } {
  let count = 0
  let first = -1
  const bad = (at: number) => {
    if (first < 0) first = at
    count++
  }
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]
    if (b < 0x80) { i++; continue }
    let need: number
    let lo = 0x80
    let hi = 0xbf
    if (b >= 0xc2 && b <= 0xdf) need = 1
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2
      if (b === 0xe0) lo = 0xa0
      else if (b === 0xed) hi = 0x9f
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3
      if (b === 0xf0) lo = 0x90
      else if (b === 0xf4) hi = 0x8f
    } else {
      bad(i)
      i++
      continue
    }
    let j = i + 1
    let ok = true
    for (let k = 0; k < need; k++, j++) {
      const c = bytes[j]
      if (c === undefined || c < (k === 0 ? lo : 0x80) || c > (k === 0 ? hi : 0xbf)) {
        ok = false
        break
      }
    }
    if (!ok) bad(i)
    i = j
  }
  return { count, first }
}

type Family = 'utf-8' | 'utf-16le' | 'utf-16be' | 'ascii'

interface Sniffed { family: Family; bom: number }

function sniffFamily (head: Uint8Array): Sniffed {
  const [a, b, c, d] = head
  if (a === 0xef && b === 0xbb && c === 0xbf) return { family: 'utf-8', bom: 3 }
  if ((a === 0xff && b === 0xfe && c === 0 && d === 0) || (a === 0 && b === 0 && c === 0xfe && d === 0xff)) {
    throw new DecodeError('UTF-32 text is not supported (use UTF-8 or UTF-16)')
  }
  if (a === 0xff && b === 0xfe) return { family: 'utf-16le', bom: 2 }
  if (a === 0xfe && b === 0xff) return { family: 'utf-16be', bom: 2 }
  if (a === 0x3c && b === 0 && c === 0x3f && d === 0) return { family: 'utf-16le', bom: 0 }
  if (a === 0 && b === 0x3c && c === 0 && d === 0x3f) return { family: 'utf-16be', bom: 0 }
  return { family: 'ascii', bom: 0 }
}

function utf16Text (bytes: Buffer, bigEndian: boolean): string {
  const even = bytes.length & ~1
  if (!bigEndian) return bytes.toString('utf16le', 0, even)
  const swapped = Buffer.from(bytes.subarray(0, even))
  swapped.swap16()
  return swapped.toString('utf16le')
}

/** One decoding strategy: bytes in, text out, invalid sequences reported through `invalid`. */
interface Decoder {
  write(bytes: Buffer, line: number): string
  end(line: number): string
}

type Invalid = (count: number, line: number) => void

function utf8Decoder (invalid: Invalid): Decoder {
  let carry: Buffer | null = null
  const decode = (bytes: Buffer, line: number) => {
    if (isUtf8(bytes)) return bytes.toString('utf8')
    const { count, first } = scanUtf8(bytes)
    if (count > 0) invalid(count, line + countNewlines(bytes, 0, first))
    return bytes.toString('utf8')
  }
  return {
    write (chunk, line) {
      const bytes = carry ? Buffer.concat([carry, chunk]) : chunk
      const tail = incompleteTail(bytes)
      carry = tail > 0 ? Buffer.from(bytes.subarray(bytes.length - tail)) : null
      return decode(tail > 0 ? bytes.subarray(0, bytes.length - tail) : bytes, line)
    },
    end (line) {
      if (!carry) return ''
      const rest = carry
      carry = null
      // The input ended inside a sequence.
      invalid(1, line)
      return rest.toString('utf8')
    }
  }
}

function utf16Decoder (bigEndian: boolean, invalid: Invalid): Decoder {
  let carryByte: Buffer | null = null
  let carryHigh = ''
  const check = (text: string, line: number) => {
    if (!HAS_LONE_SURROGATE.test(text)) return text
    let count = 0
    let firstAt = -1
    const fixed = text.replace(LONE_SURROGATE, (_m, offset: number) => {
      if (firstAt < 0) firstAt = offset
      count++
      return '\uFFFD'
    })
    invalid(count, line + countNewlinesIn(text, firstAt))
    return fixed
  }
  return {
    write (chunk, line) {
      const bytes = carryByte ? Buffer.concat([carryByte, chunk]) : chunk
      carryByte = bytes.length & 1 ? Buffer.from(bytes.subarray(bytes.length - 1)) : null
      let text = carryHigh + utf16Text(bytes, bigEndian)
      carryHigh = ''
      // A surrogate pair may straddle two chunks.
      const last = text.charCodeAt(text.length - 1)
      if (last >= 0xd800 && last <= 0xdbff) {
        carryHigh = text.slice(-1)
        text = text.slice(0, -1)
      }
      return check(text, line)
    },
    end (line) {
      let text = carryHigh
      carryHigh = ''
      if (carryByte) {
        carryByte = null
        text += '\uFFFD'
        invalid(1, line)
      }
      return text === '' ? '' : check(text, line)
    }
  }
}

function latin1Decoder (): Decoder {
  return { write: (bytes) => bytes.toString('latin1'), end: () => '' }
}

// Other WHATWG encodings: the platform's decoder; what it cannot map comes out as U+FFFD.
function whatwgDecoder (decoder: TextDecoder, invalid: Invalid): Decoder {
  const count = (text: string, line: number) => {
    let at = text.indexOf('\uFFFD')
    if (at < 0) return text
    const firstLine = line + countNewlinesIn(text, at)
    let n = 0
    for (; at >= 0; at = text.indexOf('\uFFFD', at + 1)) n++
    invalid(n, firstLine)
    return text
  }
  return {
    write: (bytes, line) => count(decoder.decode(bytes, { stream: true }), line),
    end: (line) => count(decoder.decode(), line)
  }
}

/** Picks the decoder from the start of the file (the BOM or XML declaration included). */
function chooseDecoder (head: Buffer, report: DecodeReport, invalid: Invalid): { decoder: Decoder; skip: number } {
  const { family, bom } = sniffFamily(head)
  if (family === 'utf-8') {
    report.encoding = 'utf-8'
    return { decoder: utf8Decoder(invalid), skip: bom }
  }
  if (family === 'utf-16le' || family === 'utf-16be') {
    // The byte order mark (or the byte layout of `<?`) decides; a declaration naming UTF-16 agrees.
    report.encoding = family
    return { decoder: utf16Decoder(family === 'utf-16be', invalid), skip: bom }
  }
  const start = head.toString('latin1', 0, DECLARATION_MAX_BYTES)
  const declared = ENCODING_IN_DECLARATION.exec(start)?.[2].trim()
  if (declared === undefined) {
    report.encoding = 'utf-8'
    return { decoder: utf8Decoder(invalid), skip: 0 }
  }
  const label = declared.toLowerCase()
  if (UTF8_LABELS.has(label)) {
    report.encoding = 'utf-8'
    return { decoder: utf8Decoder(invalid), skip: 0 }
  }
  if (LATIN1_LABELS.has(label)) {
    report.encoding = 'iso-8859-1'
    return { decoder: latin1Decoder(), skip: 0 }
  }
  if (UTF16_LABELS.has(label)) {
    throw new DecodeError(`the XML declaration names encoding "${declared}" but the file is not UTF-16 text (UTF-16 needs a byte order mark)`)
  }
  let decoder: TextDecoder | null = null
  try {
    decoder = new TextDecoder(label)
  } catch {
    decoder = null
  }
  if (decoder === null || decoder.encoding === 'replacement' || decoder.encoding.startsWith('utf-16')) {
    throw new DecodeError(`unsupported encoding "${declared}" in the XML declaration (supported: UTF-8, UTF-16 with a byte order mark, ISO-8859-1, windows-1252 and the other WHATWG encodings)`)
  }
  report.encoding = decoder.encoding
  return { decoder: whatwgDecoder(decoder, invalid), skip: 0 }
}

/** Whether head is enough to choose the encoding (or the input has ended). */
function headComplete (head: Buffer): boolean {
  if (head.length >= DECLARATION_MAX_BYTES) return true
  if (head.length < SNIFF_BYTES) return false
  const { family, bom } = sniffFamily(head)
  if (family !== 'ascii') return true
  const text = head.toString('latin1', bom)
  // Without a declaration there is nothing more to read; with one, wait for its end.
  return !text.startsWith('<?xml') || text.includes('?>')
}

/**
 * A streaming decoder for one KML file. `line()` gives the line the XML parser has reached, which is
 * where the text of the next chunk begins (every earlier chunk's text has been parsed by then).
 */
export class KmlDecoder {
  readonly report: DecodeReport
  private head: Buffer[] = []
  private headBytes = 0
  private decoder: Decoder | null = null
  private readonly invalid: Invalid = (count, line) => {
    if (this.report.firstInvalidLine === null) this.report.firstInvalidLine = line
    this.report.invalidSequences += count
  }

  private readonly line: () => number

  constructor (line: () => number, report?: DecodeReport) {
    this.line = line
    this.report = report ?? { encoding: null, invalidSequences: 0, firstInvalidLine: null }
    this.report.encoding = null
    this.report.invalidSequences = 0
    this.report.firstInvalidLine = null
  }

  write (chunk: Buffer): string {
    if (this.decoder) return this.decoder.write(chunk, this.line())
    this.head.push(chunk)
    this.headBytes += chunk.length
    const head = this.head.length === 1 ? this.head[0] : Buffer.concat(this.head, this.headBytes)
    if (!headComplete(head)) {
      this.head = [head]
      return ''
    }
    return this.start(head)
  }

  end (): string {
    if (!this.decoder) {
      const head = Buffer.concat(this.head, this.headBytes)
      if (head.length === 0) {
        this.report.encoding ??= 'utf-8'
        return ''
      }
      const text = this.start(head)
      // The parser has not seen that text yet: the end comes after its lines.
      return text + this.decoder!.end(this.line() + countNewlinesIn(text, text.length))
    }
    return this.decoder.end(this.line())
  }

  private start (head: Buffer): string {
    this.head = []
    const { decoder, skip } = chooseDecoder(head, this.report, this.invalid)
    this.decoder = decoder
    return decoder.write(skip > 0 ? head.subarray(skip) : head, this.line())
  }
}
