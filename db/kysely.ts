/**
 * Kysely's runtime, from its CommonJS build. Its ES module build is some 260 files, and on Node 20 every
 * one of them crosses the TypeScript loader's thread (about 0.3 s of the server's start); the CommonJS
 * build loads on Node's own thread. The values are the same classes and functions; every runtime import
 * of Kysely goes through here (the lint rule in eslint.config.js); types come from 'kysely' itself.
 */
import { createRequire } from 'node:module'
import type * as KyselyModule from 'kysely'

const kysely = createRequire(import.meta.url)('kysely') as typeof KyselyModule

export const { CompiledQuery, Kysely, Migrator, PostgresDialect, sql } = kysely
