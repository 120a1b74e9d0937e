import { STATUS_CODES } from 'node:http'

// The one error type routes throw; the error handler renders it as {error, message}.
export class HttpError extends Error {
  readonly statusCode: number
  readonly headers?: Record<string, string>
  constructor(statusCode: number, message: string, headers?: Record<string, string>) {
    super(message)
    this.name = 'HttpError'
    this.statusCode = statusCode
    this.headers = headers
  }
}

export function reasonPhrase(statusCode: number): string {
  return STATUS_CODES[statusCode] ?? 'Error'
}

export function errorBody(statusCode: number, message: string): { error: string; message: string } {
  return { error: reasonPhrase(statusCode), message }
}

const unavailableCodes = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH',
  '57P01', '57P02', '57P03', // admin shutdown, crash shutdown, cannot connect now
  '08000', '08003', '08006', '08001', '08004', // connection exceptions
  '57014', // statement timeout
  '53300' // too many connections
])

// True for failures that mean "the database cannot serve right now", as opposed to a bug in a query.
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const e = err as { code?: unknown; message?: unknown }
  if (typeof e.code === 'string' && unavailableCodes.has(e.code)) return true
  const message = typeof e.message === 'string' ? e.message : ''
  return /timeout exceeded when trying to connect|Connection terminated|connection is closed|Client has encountered a connection error|terminating connection/i.test(message)
}
