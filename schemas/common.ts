import { Type, type TSchema } from '@sinclair/typebox'

export const ErrorResponse = Type.Object({
  error: Type.String({ description: 'HTTP reason phrase', examples: ['Bad Request'] }),
  message: Type.String({ description: 'What went wrong', examples: ['querystring/limit must be <= 1000'] })
}, { title: 'Error', additionalProperties: false })

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

// Shared error entries for route schemas, so each route lists exactly the statuses it can answer.
export function errors(...statuses: number[]): Record<number, typeof ErrorResponse> {
  const out: Record<number, typeof ErrorResponse> = {}
  for (const s of statuses) out[s] = ErrorResponse
  return out
}
