// The loader for the project's TypeScript, given to `node --import` by every npm script. Node runs the
// sources itself where it strips types (Node 22.18+, 23.6+ and 24: every source here is erasable syntax,
// which tsc's erasableSyntaxOnly enforces); older Node (20) registers tsx's loader instead. Node's own
// stripping starts the server about 0.7 s sooner: no loader thread that every import crosses.
if (!process.features.typescript) await import('tsx/esm')
