import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify'
import { FormatQuery } from '../../../schemas/geojson.ts'
import { GEOJSON_TYPE } from '../../../lib/geo/geojson.ts'
import { addVary } from '../../../lib/vary.ts'
import { etagHeaders, notModified } from '../../../schemas/common.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    // false: the route's answers do not depend on the dataset and the URL alone, or are not worth keeping.
    datasetCache?: boolean
    // The schema of the route's GeoJSON answer (schemas/geojson.ts): the route answers it for
    // `Accept: application/geo+json` or `format=geojson`, and the OpenAPI document lists both content types.
    geojson?: object
  }
}

type RouteSchema = { querystring?: QuerySchema; response?: Record<string, unknown> }

const GEOJSON_NOTE = 'JSON by default; RFC 7946 GeoJSON (`application/geo+json`) with `Accept: application/geo+json` or `format=geojson`.'

// Both answers of a GeoJSON route depend on the Accept header: caches in between must key on it.
function varyAccept (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  addVary(reply, 'accept')
  done()
}

// OpenAPI 3.0 schemas take one `example`, not JSON Schema's `examples` list (the document's generator
// converts a single-type answer itself, but leaves a per-content-type answer as it is given).
function openapiExamples (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openapiExamples)
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'examples' && Array.isArray(value)) {
      if (value.length) out.example = value[0]
    } else if (key === 'properties' && typeof value === 'object' && value !== null) {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, property]) => [name, openapiExamples(property)]))
    } else out[key] = typeof value === 'object' ? openapiExamples(value) : value
  }
  return out
}

/** The route's document schema with its 200 answer in both content types. */
function withGeoJsonAnswer (schema: RouteSchema, geojson: object): RouteSchema {
  const json = schema.response?.['200']
  if (json === undefined) return schema
  // The answer's words and headers belong to the response, not to its JSON schema.
  const { description, headers, ...jsonSchema } = json as { description?: string; headers?: object }
  return {
    ...schema,
    response: {
      ...schema.response,
      200: {
        description: description ? `${description}. ${GEOJSON_NOTE}` : GEOJSON_NOTE,
        ...(headers ? { headers } : {}),
        content: { 'application/json': { schema: openapiExamples(jsonSchema) }, [GEOJSON_TYPE]: { schema: openapiExamples(geojson) } }
      }
    }
  }
}

type QuerySchema = { type?: string; properties?: object; additionalProperties?: unknown } | undefined

/**
 * Every GET below /api/v1 reads only the imported dataset, so its answers are kept per URL until the
 * next import (see plugins/app/dataset-cache.ts), unless the route opts out. Unknown query parameters
 * are refused with 400: each would otherwise make a new URL, and a new cache entry, of the same answer.
 * A route naming a GeoJSON schema in its config gets the `format` parameter, `Vary: Accept`, and
 * both content types in the OpenAPI document.
 */
export default async function datasetPolicy (app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.includes('GET') && !methods.includes('HEAD')) return
    const schema = (route.schema ??= {}) as RouteSchema
    if (schema.querystring === undefined) schema.querystring = { type: 'object', properties: {}, additionalProperties: false }
    else if (schema.querystring.additionalProperties === undefined) schema.querystring = { ...schema.querystring, additionalProperties: false }
    const geojson = route.config?.geojson
    if (geojson !== undefined) {
      schema.querystring = { ...schema.querystring, properties: { ...schema.querystring.properties, format: FormatQuery } }
      route.onRequest = route.onRequest === undefined ? [varyAccept] : [route.onRequest, varyAccept].flat()
      route.config!.swaggerTransform = ({ schema, url }) => ({ schema: withGeoJsonAnswer(schema as RouteSchema, geojson) as never, url })
    }
    if (route.config?.datasetCache !== false) {
      app.datasetCache.cacheRoute(route)
      documentCaching(schema)
    }
  })
}

/** A cached route's document: its 200 carries the ETag, and 304 answers a current `If-None-Match`. */
function documentCaching (schema: RouteSchema): void {
  const ok = schema.response?.['200'] as { headers?: object } | undefined
  if (ok === undefined) return
  schema.response = { ...schema.response, 200: { ...ok, headers: { ...ok.headers, ...etagHeaders } }, 304: notModified }
}
