/**
 * A Fastify compilers factory (validators or serializers) whose compilers compile each distinct schema
 * once. Fastify asks for one function per route and part (or status), in every plugin scope with schemas
 * of its own, and most of them are the same few shapes. What a compiler builds depends only on the
 * schema, the scope's shared schemas and the options, so equal ones (compared as JSON) share a function.
 */
type Compiler = (route: { schema?: unknown }) => unknown
type Factory = (externalSchemas: never, options: never) => (route: never) => unknown

export function compileOnce<F extends Factory> (build: F): F {
  const factory = build as unknown as (externalSchemas: unknown, options: unknown) => Compiler
  // By the shared schemas and options a scope compiles with, then by the schema.
  const scopes = new Map<string, Map<string, unknown>>()
  const shared = (externalSchemas: unknown, options: unknown): Compiler => {
    const compile = factory(externalSchemas, options)
    const scopeKey = JSON.stringify([externalSchemas, options ?? null])
    let scope = scopes.get(scopeKey)
    if (scope === undefined) scopes.set(scopeKey, scope = new Map())
    const compiled = scope
    return (route) => {
      const key = JSON.stringify(route.schema)
      let fn = compiled.get(key)
      if (fn === undefined) {
        fn = compile(route)
        compiled.set(key, fn)
      }
      return fn
    }
  }
  return shared as unknown as F
}
