// The box index worker thread's entry (db/box-index-load.ts). A worker inherits the process's --import
// flags, but on Node 20 tsx registers its loader in the main thread only: there the worker registers it
// itself before loading the TypeScript. Where Node strips types, the inherited loader is enough.
if (!process.features.typescript) {
  const { register } = await import('tsx/esm/api')
  register()
}
await import('./box-index-worker.ts')
