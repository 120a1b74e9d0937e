import { once } from 'node:events'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'

const NEEDS_ESCAPE = /[\\\n\r\t]/
// A value in COPY's text format: backslash, newline, carriage return and tab escaped.
export const copyText = (v: string): string =>
  NEEDS_ESCAPE.test(v) ? v.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t')) : v

export interface CopyWriter {
  // Appends COPY text (whole lines); a promise only when a chunk went out and the stream pushed back.
  write(text: string): Promise<void> | undefined
  // Sends the rest and waits until PostgreSQL has taken it all; throws what the COPY failed with.
  end(): Promise<void>
  destroy(): void
}

/**
 * One `COPY ... FROM STDIN` on the client, fed in chunks of about chunkBytes with back-pressure, so a
 * load streams at the pace PostgreSQL takes rows. An error of the COPY surfaces at the next write.
 */
export function copyWriter (client: pg.PoolClient, statement: string, chunkBytes = 256 * 1024): CopyWriter {
  const stream = client.query(copyFrom(statement))
  let failure: Error | null = null
  stream.on('error', (err: Error) => { failure = err })
  let pending = ''
  const flush = async () => {
    if (failure) throw failure
    if (!pending) return
    const ok = stream.write(pending)
    pending = ''
    if (!ok) await Promise.race([once(stream, 'drain'), once(stream, 'error')])
    if (failure) throw failure
  }
  return {
    write (text) {
      pending += text
      return pending.length >= chunkBytes ? flush() : undefined
    },
    async end () {
      await flush()
      stream.end()
      await once(stream, 'finish')
      if (failure) throw failure
    },
    destroy () { stream.destroy() }
  }
}
