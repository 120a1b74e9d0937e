/**
 * TypeBox's runtime, from its CommonJS build. Its ES module build is some 250 files, and on Node 20 every
 * one of them crosses the TypeScript loader's thread (about 0.1 s of the server's start); the CommonJS
 * build loads on Node's own thread. Schemas are plain objects marked with global symbols, so they are the
 * same whichever build made them. Every runtime import of TypeBox goes through here (the lint rule in
 * eslint.config.js); types come from TypeBox and its Fastify type provider themselves.
 */
import { createRequire } from 'node:module'
import type * as TypeBox from '@sinclair/typebox'
import type * as TypeBoxValue from '@sinclair/typebox/value'

const require = createRequire(import.meta.url)

export const { Type } = require('@sinclair/typebox') as typeof TypeBox
export const { Value } = require('@sinclair/typebox/value') as typeof TypeBoxValue
