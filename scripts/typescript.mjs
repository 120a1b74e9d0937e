// The loader for the project's TypeScript, given to `node --import` by every npm script. Node runs the
// sources itself where it strips types (Node 22.18+, 23.6+ and 24: every source here is erasable syntax,
// which tsc's erasableSyntaxOnly enforces); older Node (20) registers tsx's loader instead. Node's own
// stripping starts the server about 0.7 s sooner: no loader thread that every import crosses.
import module from 'node:module'
import v8 from 'node:v8'

// Node 22.1+ keeps what it compiled (and, for TypeScript, what it stripped) in a cache on disk
// (NODE_COMPILE_CACHE, or node-compile-cache in the temporary directory), so a second start skips both.
// Not under coverage: V8 counts less precisely in functions restored from the cache.
if (typeof module.enableCompileCache === 'function' && !process.env.NODE_V8_COVERAGE) module.enableCompileCache()

if (!process.features.typescript) {
  // The loader's thread is idle once the modules are loaded, but V8 would keep the young generation it
  // grew while loading them (two 16 MB semi-spaces). Its isolate is made now, with 1 MB ones; the
  // process's own thread was made before and keeps V8's default, and the setting is restored after.
  v8.setFlagsFromString('--max-semi-space-size=1')
  try {
    await import('tsx/esm')
  } finally {
    v8.setFlagsFromString('--max-semi-space-size=0')
  }
}
