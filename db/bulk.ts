import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'

/** A column value: text, a number, null, a text or float8 array, or an object stored as JSON (jsonb). */
export type BulkValue = string | number | null | readonly string[] | readonly number[] | object

export interface BulkWriter {
  /**
   * Adds a row (values in the writer's column order; read before it returns, so the array may be reused).
   * An array or object value must not change once added: a column given the same one as the row before
   * reuses the text it was written as (a folder path shared by a folder's placemarks is written once).
   * A promise only when the database pushes back.
   */
  add(row: readonly BulkValue[]): Promise<void> | undefined
  /** Sends the rest and waits until the database has taken it all; throws what the load failed with. */
  close(): Promise<void>
  /** Stops at once; what was sent is left to the transaction's rollback. */
  abort(): void
}

export interface BulkOptions {
  // PostgreSQL: COPY ... WITH (FREEZE), for a table created or truncated in this transaction.
  freeze?: boolean
  // PGlite: rows per INSERT.
  batchRows?: number
  // The columns holding JSON (json or jsonb): their values (arrays included) are written as JSON, not as text arrays.
  json?: readonly string[]
}

/**
 * The one way rows go into a table in bulk, on the transaction's client: `COPY ... FROM STDIN` on
 * PostgreSQL, fed in chunks with back-pressure; batched INSERTs of one JSON parameter each on PGlite,
 * which has no COPY from a client stream. Either way the caller's rows stream, and memory holds one
 * chunk or batch.
 */
export function bulkWriter (client: pg.PoolClient, kind: 'postgres' | 'pglite', table: string, columns: readonly string[], options: BulkOptions = {}): BulkWriter {
  return kind === 'postgres' ? copyWriter(client, table, columns, options) : batchWriter(client, table, columns, options)
}

const NEEDS_ESCAPE = /[\\\n\r\t]/
// A value in COPY's text format: backslash, newline, carriage return and tab escaped.
const copyText = (v: string): string =>
  NEEDS_ESCAPE.test(v) ? v.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t')) : v
// A PostgreSQL array literal of texts or numbers.
const arrayLiteral = (items: readonly (string | number)[]) => `{${items.map((s) => (typeof s === 'number' ? String(s) : `"${s.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`

function copyValue (v: BulkValue, json: boolean): string {
  if (v === null) return '\\N'
  if (json) return copyText(JSON.stringify(v))
  if (typeof v === 'number') return String(v)
  if (typeof v === 'string') return copyText(v)
  if (Array.isArray(v)) return copyText(arrayLiteral(v as readonly (string | number)[]))
  return copyText(JSON.stringify(v))
}

// Waits for the stream's `event` (it takes more, or it finished) or its failure; both listeners go when
// either comes, so that waits in a loop leave none behind.
function settled (stream: NodeJS.EventEmitter, event: 'drain' | 'finish'): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      stream.off(event, done)
      stream.off('error', done)
      resolve()
    }
    stream.on(event, done)
    stream.on('error', done)
  })
}

function copyWriter (client: pg.PoolClient, table: string, columns: readonly string[], options: BulkOptions, chunkBytes = 256 * 1024): BulkWriter {
  const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN${options.freeze ? ' WITH (FREEZE)' : ''}`))
  const json = columns.map((c) => options.json?.includes(c) ?? false)
  let failure: Error | null = null
  stream.on('error', (err: Error) => { failure = err })
  // The chunk's lines, joined when it is sent: one string built then, not a rope of every value.
  let lines: string[] = []
  let pendingChars = 0
  const values: string[] = new Array(columns.length)
  // Per column, the last array or object value and its text.
  const lastValue: unknown[] = new Array(columns.length).fill(undefined)
  const lastText: string[] = new Array(columns.length).fill('')
  const flush = async () => {
    if (failure) throw failure
    if (!lines.length) return
    lines.push('')
    const ok = stream.write(lines.join('\n'))
    lines = []
    pendingChars = 0
    if (!ok) await settled(stream, 'drain')
    if (failure) throw failure
  }
  return {
    add (row) {
      for (let i = 0; i < row.length; i++) {
        const v = row[i]!
        if (v !== null && typeof v === 'object') {
          if (v !== lastValue[i]) {
            lastValue[i] = v
            lastText[i] = copyValue(v, json[i]!)
          }
          values[i] = lastText[i]!
        } else values[i] = copyValue(v, json[i]!)
      }
      const line = values.join('\t')
      lines.push(line)
      pendingChars += line.length + 1
      return pendingChars >= chunkBytes ? flush() : undefined
    },
    async close () {
      await flush()
      const finished = settled(stream, 'finish')
      stream.end()
      await finished
      if (failure) throw failure
    },
    abort () { stream.destroy() }
  }
}

function batchWriter (client: pg.PoolClient, table: string, columns: readonly string[], options: BulkOptions): BulkWriter {
  const batchRows = options.batchRows ?? 1000
  const text = `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${columns.join(', ')} FROM json_populate_recordset(NULL::${table}, $1::json)`
  let batch: Record<string, BulkValue>[] = []
  const flush = async () => {
    if (!batch.length) return
    const json = JSON.stringify(batch)
    batch = []
    await client.query(text, [json])
  }
  return {
    add (row) {
      const record: Record<string, BulkValue> = {}
      for (let i = 0; i < columns.length; i++) record[columns[i]!] = row[i]!
      batch.push(record)
      return batch.length >= batchRows ? flush() : undefined
    },
    close: flush,
    abort () { batch = [] }
  }
}
