/**
 * A Fastify compilers factory (validators or serializers) whose compilers compile each distinct schema
 * once, and not before it is needed. Fastify asks for one function per route and part (or status), in
 * every plugin scope with schemas of its own, and most of them are the same few shapes. What a compiler
 * builds depends only on the schema, the scope's shared schemas and the options, so equal ones (compared
 * as JSON) share a function.
 *
 * Compiling every route's schemas took a sixth of the server's start (0.3–0.4 s of 2–3 s, Node 20), all
 * before the first request. So Fastify gets a stand-in at once; the real function is compiled at its
 * first call, or by `compilePending` (the server calls it from a second after it listens, one per turn between
 * requests), whichever comes first. The stand-in costs one more call per use.
 */
type Compiler = (route: { schema?: unknown }) => unknown
type Factory = (externalSchemas: never, options: never) => (route: never) => unknown
type Compiled = ((data: unknown) => unknown) & { errors?: unknown }

export interface DeferredCompilers {
  /** Compiles up to `limit` of the schemas no call has needed yet; answers how many it compiled. */
  compilePending (limit?: number): number
}

export function compileOnce<F extends Factory> (build: F): F & DeferredCompilers {
  const factory = build as unknown as (externalSchemas: unknown, options: unknown) => Compiler
  // By the shared schemas and options a scope compiles with: one compiler (an Ajv instance, a serializer's
  // options), made when its first schema compiles, and the functions by schema.
  const scopes = new Map<string, { compiler?: Compiler; compiled: Map<string, Compiled> }>()
  const pending = new Set<() => void>()
  const shared = (externalSchemas: unknown, options: unknown): Compiler => {
    const scopeKey = JSON.stringify([externalSchemas, options ?? null])
    let scope = scopes.get(scopeKey)
    if (scope === undefined) scopes.set(scopeKey, scope = { compiled: new Map() })
    const { compiled } = scope
    const compile = (route: { schema?: unknown }): Compiled => (scope.compiler ??= factory(externalSchemas, options))(route) as Compiled
    return (route) => {
      const key = JSON.stringify(route.schema)
      let fn = compiled.get(key)
      if (fn === undefined) {
        fn = deferred(() => compile(route), pending)
        compiled.set(key, fn)
      }
      return fn
    }
  }
  return Object.assign(shared, {
    compilePending (limit = Infinity): number {
      let done = 0
      for (const compileNow of pending) {
        if (done >= limit) break
        compileNow()
        done++
      }
      return done
    }
  }) as unknown as F & DeferredCompilers
}

/**
 * A function that compiles the real one at its first call (or when `pending` gets to it) and then passes
 * every call through. A validator's `errors` (which Fastify reads after a `false`) are the real one's.
 */
function deferred (compile: () => Compiled, pending: Set<() => void>): Compiled {
  let real: Compiled | undefined
  const compileNow = (): Compiled => {
    if (real === undefined) {
      pending.delete(compileNow)
      real = compile()
    }
    return real
  }
  pending.add(compileNow)
  // Fastify calls validators and serializers with the one value (the stand-in has no Ajv `schemaEnv`).
  const standIn: Compiled = (data: unknown): unknown => {
    const fn = real ?? compileNow()
    const result = fn(data)
    standIn.errors = fn.errors
    return result
  }
  standIn.errors = null
  return standIn
}
