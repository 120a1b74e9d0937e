import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifyServerOptions } from 'fastify'
import { compileOnce, type DeferredCompilers } from '../../lib/compile-once.ts'

// Server options, not a plugin: app.ts hands them to Fastify.
export const autoload = false

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>

interface Refusal { instancePath: string; schemaPath: string; keyword: string; params: Record<string, never>; message: string }

// Request bodies here are small documents; a deeper one is not walked past this depth.
const MAX_DEPTH = 32

/**
 * What Ajv lets through but no route can use: after coercion `1e309` and `Infinity` are numbers (Ajv
 * skips minimum and maximum for non-finite values), and PostgreSQL refuses a NUL character in any text.
 * Returns the first offending value's path and the reason, or null.
 */
export function unusableValue (data: unknown, path = '', depth = 0): Refusal | null {
  if (typeof data === 'number') {
    return Number.isFinite(data) ? null : refusal(path, 'finite', 'must be a finite number')
  }
  if (typeof data === 'string') {
    return data.includes('\u0000') ? refusal(path, 'noNul', 'must not contain a NUL character') : null
  }
  if (data === null || typeof data !== 'object' || depth >= MAX_DEPTH) return null
  if (Array.isArray(data)) {
    for (let i = 0; i < data.length; i++) {
      const found = unusableValue(data[i], `${path}/${i}`, depth + 1)
      if (found) return found
    }
    return null
  }
  for (const key in data) {
    if (key.includes('\u0000')) return refusal(`${path}/${key.replaceAll('\u0000', '\\u0000')}`, 'noNul', 'must not contain a NUL character')
    const found = unusableValue((data as Record<string, unknown>)[key], `${path}/${key}`, depth + 1)
    if (found) return found
  }
  return null
}

const refusal = (instancePath: string, keyword: string, message: string): Refusal =>
  ({ instancePath, schemaPath: '#', keyword, params: {}, message })

/**
 * Fastify's own Ajv compiler, each validator followed by the check above: one place that holds for
 * every parameter, body and header of every route, present and future. A refusal is reported like
 * any validation error (400 `querystring/limit must be a finite number`). Each distinct schema is
 * compiled once (lib/compile-once.ts): 76 compilations of 28 distinct schemas when this was written.
 */
export function strictValidatorFactory (): BuildValidator & DeferredCompilers {
  const build = AjvCompiler()
  return compileOnce<BuildValidator>((externalSchemas: Parameters<BuildValidator>[0], options: Parameters<BuildValidator>[1]) => {
    const compile = build(externalSchemas, options)
    return (routeSchema: Parameters<ReturnType<BuildValidator>>[0]) => {
      const validate = compile(routeSchema)
      // Fastify reads the refusals from the function's `errors`, as Ajv leaves them.
      const strict = Object.assign((data: unknown): boolean => {
        if (!validate(data)) {
          strict.errors = validate.errors
          return false
        }
        const found = unusableValue(data)
        strict.errors = found ? [found] : null
        return found === null
      }, validate, { errors: null as unknown })
      return strict as unknown as typeof validate
    }
  })
}

type FormatError = NonNullable<FastifyServerOptions['schemaErrorFormatter']>

/**
 * Validation failures as Fastify words them (`querystring/limit must be <= 1000`), but an unknown
 * parameter or property is named: `querystring: unknown parameter 'foo'`, `body: unknown property 'x'`.
 */
export const schemaErrorFormatter: FormatError = (errors, dataVar) => {
  const parts = errors.map((e) => {
    const unknown = e.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: string }).additionalProperty : undefined
    if (unknown !== undefined) return `${dataVar}${e.instancePath}: unknown ${dataVar === 'querystring' ? 'parameter' : 'property'} '${unknown}'`
    return `${dataVar}${e.instancePath} ${e.message ?? 'is invalid'}`
  })
  return new Error(parts.join(', '))
}
