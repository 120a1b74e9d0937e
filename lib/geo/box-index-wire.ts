import type { BoxIndexParts } from './box-index.ts'

// A box index's parts (BoxIndex.toParts: every array in one buffer) as a header, plain JSON, and that
// buffer's bytes, for a pipe between processes; and back, the arrays as views of one buffer the size of
// the bytes, allocated once.

const TYPES = { u8: Uint8Array, u16: Uint16Array, u32: Uint32Array, f64: Float64Array }
type TypeName = keyof typeof TYPES

interface ArrayRef { $: TypeName; at: number; length: number }

const typeName = (a: ArrayBufferView): TypeName =>
  a instanceof Float64Array ? 'f64' : a instanceof Uint32Array ? 'u32' : a instanceof Uint16Array ? 'u16' : 'u8'

/** The parts' header (each array as its type, byte offset and length in `bytes`) and the bytes. */
export function toWire (parts: BoxIndexParts): { header: string; bytes: Uint8Array } {
  let buffer: ArrayBufferLike | null = null
  const encode = (value: unknown): unknown => {
    if (ArrayBuffer.isView(value)) {
      if (buffer !== null && value.buffer !== buffer) throw new Error('the parts are not in one buffer')
      buffer = value.buffer
      return { $: typeName(value), at: value.byteOffset, length: (value as Uint8Array).length } satisfies ArrayRef
    }
    if (Array.isArray(value)) return value.map(encode)
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]))
    return value
  }
  const header = JSON.stringify(encode(parts))
  return { header, bytes: buffer === null ? new Uint8Array(0) : new Uint8Array(buffer) }
}

/** The parts again, their arrays views of `buffer` (the bytes toWire gave). */
export function fromWire (header: string, buffer: ArrayBuffer): BoxIndexParts {
  const decode = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decode)
    if (value !== null && typeof value === 'object') {
      if ('$' in value) {
        const { $, at, length } = value as ArrayRef
        return new TYPES[$](buffer, at, length)
      }
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]))
    }
    return value
  }
  return decode(JSON.parse(header)) as BoxIndexParts
}
