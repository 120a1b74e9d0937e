import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

// Without a configured secret, cursors are this process's own.
const processSecret = randomBytes(32)
const NONCE_BYTES = 12
const TAG_BYTES = 16

export interface CursorCodec<T> {
  encode(position: T, scope: string): string
  /** The position, or null for a cursor this service did not issue, or issued for another scope. */
  decode(cursor: string, scope: string): T | null
}

/**
 * Opaque page cursors: a position sealed with AES-256-GCM under a key derived from the secret (JWT_SECRET,
 * so that every instance reads the others') and the purpose (one per listing), and bound to a scope:
 * whatever the page depends on besides the cursor (the caller, the filters, the limit). Without the key a
 * cursor can be neither read, made nor altered, and it is good only for the listing and scope it came from.
 */
export function cursorCodec<T> (purpose: string, secret: string | undefined, isPosition: (value: unknown) => value is T): CursorCodec<T> {
  const key = Buffer.from(hkdfSync('sha256', secret ?? processSecret, 'page-cursor', purpose, 32))
  return {
    encode (position, scope) {
      const nonce = randomBytes(NONCE_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(scope))
      const sealed = Buffer.concat([cipher.update(JSON.stringify(position)), cipher.final()])
      return Buffer.concat([nonce, sealed, cipher.getAuthTag()]).toString('base64url')
    },
    decode (cursor, scope) {
      const bytes = Buffer.from(cursor, 'base64url')
      // The decoder skips stray characters and spare bits: only a cursor's exact text is that cursor.
      if (bytes.length <= NONCE_BYTES + TAG_BYTES || bytes.toString('base64url') !== cursor) return null
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES })
        .setAAD(Buffer.from(scope))
        .setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
      let text: string
      try {
        text = Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8')
      } catch {
        return null
      }
      const position: unknown = JSON.parse(text)
      return isPosition(position) ? position : null
    }
  }
}
