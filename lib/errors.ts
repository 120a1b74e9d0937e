import { STATUS_CODES } from 'node:http'

// The one error type routes throw; the error handler renders it as {error, message}.
export class HttpError extends Error {
  readonly statusCode: number
  readonly headers?: Record<string, string>
  constructor (statusCode: number, message: string, headers?: Record<string, string>) {
    super(message)
    this.name = 'HttpError'
    this.statusCode = statusCode
    this.headers = headers
  }
}

export function reasonPhrase (statusCode: number): string {
  return STATUS_CODES[statusCode] ?? 'Error'
}

export function errorBody (statusCode: number, message: string): { error: string; message: string } {
  return { error: reasonPhrase(statusCode), message }
}

const unavailableCodes = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
  '57014', // statement timeout
  '55000', // the database is not accepting connections (datallowconn off)
  '3D000', // the database does not exist (dropped or renamed under the server)
  '28000', '28P01' // the role or its password is refused
])
// Whole classes: connection exceptions (08), insufficient resources (53: too many connections, disk
// full, out of memory), operator intervention (57P: shutdown, cannot connect now, database dropped).
const unavailableClasses = /^(08|53|57P)/

// True for failures that mean "the database cannot serve right now", as opposed to a bug in a query.
export function isDatabaseUnavailable (err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const e = err as { code?: unknown; message?: unknown }
  if (typeof e.code === 'string' && (unavailableCodes.has(e.code) || unavailableClasses.test(e.code))) return true
  const message = typeof e.message === 'string' ? e.message : ''
  return /timeout exceeded when trying to connect|Query read timeout|Connection terminated|connection is closed|Client has encountered a connection error|terminating connection/i.test(message)
}

// A deadlock's victim (40P01) or a serialization failure (40001): the transaction lost to another one and
// may simply run again; never the client's fault nor a bug.
export function isTransactionConflict (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40P01' || code === '40001'
}
