import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'
import { compileOnce, type DeferredCompilers } from '../../lib/compile-once.ts'

// Server options, not a plugin: app.ts hands them to Fastify.
export const autoload = false

type BuildSerializer = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']>

/**
 * Fastify's own serializer compiler (fast-json-stringify), each distinct response schema compiled once:
 * 407 compilations of 51 distinct schemas at start-up when this was written, a sixth of the start. Each
 * compiles at its first use or after the server listens (lib/compile-once.ts), not before it is ready.
 */
export function sharedSerializerFactory (): BuildSerializer & DeferredCompilers {
  return compileOnce<BuildSerializer>(SerializerSelector())
}
