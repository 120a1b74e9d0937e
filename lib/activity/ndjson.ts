import type { Readable } from 'node:stream'
import { validateActivityEvent, type ActivityEvent, type CreatedAtRange } from './event.ts'

export { MAX_ID_LENGTH, MAX_USERNAME_LENGTH } from './event.ts'
// The longest line read, in bytes without its line break; a longer one is an invalid line.
export const MAX_LINE_BYTES = 1024 * 1024

export interface ReadLinesOptions {
  // The dates accepted, fixed for the whole read.
  createdAt: CreatedAtRange
  maxLineBytes?: number
}

export type LineResult =
  | { lineNumber: number; event: ActivityEvent; error?: undefined }
  | { lineNumber: number; error: string; event?: undefined }

/**
 * Validates one NDJSON line: the event (createdAt normalised to UTC, fields of other types and unknown
 * fields ignored) or the reason it is refused.
 */
export function parseActivityLine (line: string, createdAt: CreatedAtRange): ActivityEvent | string {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return 'not valid JSON'
  }
  return validateActivityEvent(value, createdAt)
}

const LF = 0x0a
const CR = 0x0d
const describeBytes = (n: number) => (n % (1024 * 1024) === 0 ? `${n} bytes (${n / (1024 * 1024)} MiB)` : `${n} bytes`)

/**
 * Streams an NDJSON source line by line with 1-based line numbers; blank lines are skipped.
 *
 * Lines are cut from the raw bytes and decoded one at a time. A line longer than maxLineBytes is
 * reported as invalid as soon as it passes the limit, and the rest of it is skipped without being
 * kept, so memory stays within about one line of the limit whatever the input.
 */
export async function * readActivityLines (input: Readable | AsyncIterable<Buffer | string>, options: ReadLinesOptions): AsyncGenerator<LineResult> {
  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES
  const tooLong = `line is longer than ${describeBytes(maxLineBytes)}`
  let lineNumber = 0
  // The start of the current line, from earlier chunks.
  let parts: Buffer[] = []
  let partBytes = 0
  // The current line passed the limit: it was reported, and is skipped up to its end.
  let skipping = false

  const finish = (last: Buffer, start: number, end: number): LineResult | null => {
    lineNumber++
    if (skipping) {
      skipping = false
      return null
    }
    let bytes = parts.length === 0 ? last.subarray(start, end) : Buffer.concat([...parts, last.subarray(start, end)])
    parts = []
    partBytes = 0
    if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1)
    const text = bytes.toString('utf8')
    // A UTF-8 byte order mark is not part of the first object.
    const line = lineNumber === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
    if (line.trim() === '') return null
    const result = parseActivityLine(line, options.createdAt)
    return typeof result === 'string' ? { lineNumber, error: result } : { lineNumber, event: result }
  }

  for await (const raw of input) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : (raw as Buffer)
    let start = 0
    while (start < chunk.length) {
      const newline = chunk.indexOf(LF, start)
      const end = newline < 0 ? chunk.length : newline
      if (!skipping) {
        // A CR right before the LF is part of the line break, not of the line.
        const length = partBytes + end - start - (newline >= 0 && end > start && chunk[end - 1] === CR ? 1 : 0)
        if (length > maxLineBytes) {
          skipping = true
          parts = []
          partBytes = 0
          yield { lineNumber: lineNumber + 1, error: tooLong }
        }
      }
      if (newline < 0) {
        if (!skipping && end > start) {
          // A copy, so that a line's start does not keep a whole chunk alive.
          parts.push(Buffer.from(chunk.subarray(start, end)))
          partBytes += end - start
        }
        break
      }
      const result = finish(chunk, start, end)
      if (result) yield result
      start = newline + 1
    }
  }
  if (partBytes > 0 || skipping) {
    const result = finish(Buffer.alloc(0), 0, 0)
    if (result) yield result
  }
}
