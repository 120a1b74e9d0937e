import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'

// Server options, not a plugin: app.ts hands them to Fastify.
export const autoload = false

type BuildSerializer = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']>
type Serializer = (data: unknown) => string

/**
 * Fastify's own serializer compiler (fast-json-stringify), each distinct response schema compiled once.
 * Fastify compiles a serializer for every route and status, in every plugin scope that has schemas of its
 * own, and most of them are the same few answer and error shapes: 407 compilations of 51 distinct schemas
 * when this was written, a sixth of the server's start-up. What fast-json-stringify builds depends only on
 * the schema, the shared schemas and the options, so equal ones (compared as JSON) share one function.
 */
export function sharedSerializerFactory (): BuildSerializer {
  const build = SerializerSelector()
  // By the shared schemas and options a scope compiles with, then by the response schema.
  const scopes = new Map<string, Map<string, Serializer>>()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    const scopeKey = JSON.stringify([externalSchemas, options ?? null])
    let compiled = scopes.get(scopeKey)
    if (compiled === undefined) scopes.set(scopeKey, compiled = new Map())
    const serializers = compiled
    return (route) => {
      const key = JSON.stringify(route.schema)
      let serializer = serializers.get(key)
      if (serializer === undefined) {
        serializer = compile(route) as Serializer
        serializers.set(key, serializer)
      }
      return serializer
    }
  }
}
