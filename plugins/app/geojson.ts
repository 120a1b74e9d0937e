import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify'
import { GEOJSON_TYPE, wantsGeoJson } from '../../lib/geo/geojson.ts'
import { addVary } from '../../lib/vary.ts'
import { FormatAliasQuery, FormatQuery } from '../../schemas/geojson.ts'
import { HttpError } from '../../lib/errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    // The schema of the route's GeoJSON answer (schemas/geojson.ts): the route answers it for
    // `Accept: application/geo+json` or `format=geojson`, and the OpenAPI document lists both content types.
    geojson?: object
  }
  interface FastifyRequest {
    /** Whether the request asks for GeoJSON: `format=geojson`, or else `Accept: application/geo+json`. */
    wantsGeoJson(): boolean
  }
  interface FastifyReply {
    /**
     * A GeoJSON answer: the bytes with their content type. Typed as `never` so that it fits every
     * route's declared (JSON) payload; the answer cache keeps bytes as they are.
     */
    geojson(text: string | Buffer): never
  }
}

type QuerySchema = { type?: string; properties?: object; additionalProperties?: unknown } | undefined
type RouteSchema = { querystring?: QuerySchema; response?: Record<string, unknown> }

const GEOJSON_NOTE = 'JSON by default; RFC 7946 GeoJSON (`application/geo+json`) with `Accept: application/geo+json`, `format=geojson` or `f=geojson`.'

// Both answers of a GeoJSON route depend on the Accept header: caches in between must key on it.
function varyAccept (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  addVary(reply, 'accept')
  done()
}

// `f` is `format` under the name OGC API clients send: given both, they must say the same.
function formatsAgree (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const query = request.query as { format?: string; f?: string } | undefined
  if (query?.format !== undefined && query.f !== undefined && query.format !== query.f) {
    return done(new HttpError(400, `querystring/f (${query.f}) and querystring/format (${query.format}) disagree; give one of them`))
  }
  done()
}

// OpenAPI 3.0 schemas take one `example`, not JSON Schema's `examples` list (the document's generator
// converts a single-type answer itself, but leaves a per-content-type answer as it is given).
export function openapiExamples (schema: unknown): unknown {
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

/**
 * The placemark routes' second content type, negotiated per request. A route declares it with
 * `config.geojson` (the GeoJSON answer's schema) and gets the `format` parameter, `Vary: Accept`, and
 * both content types in the OpenAPI document.
 */
export default fp(async function geojson (app: FastifyInstance) {
  app.addHook('onRoute', (route: RouteOptions) => {
    const geojson = route.config?.geojson
    if (geojson === undefined) return
    const schema = (route.schema ??= {}) as RouteSchema
    const query = schema.querystring ?? { type: 'object', properties: {} }
    schema.querystring = { ...query, properties: { ...query.properties, format: FormatQuery, f: FormatAliasQuery } }
    route.onRequest = route.onRequest === undefined ? [varyAccept] : [route.onRequest, varyAccept].flat()
    route.preHandler = route.preHandler === undefined ? [formatsAgree] : [route.preHandler, formatsAgree].flat()
    route.config!.swaggerTransform = ({ schema, url }) => ({ schema: withGeoJsonAnswer(schema as RouteSchema, geojson) as never, url })
  })
  app.decorateRequest('wantsGeoJson', function (this: FastifyRequest) {
    const query = this.query as { format?: string; f?: string } | undefined
    return wantsGeoJson(query?.format ?? query?.f, this.headers.accept)
  })
  app.decorateReply('geojson', function (this: FastifyReply, text: string | Buffer) {
    this.type(GEOJSON_TYPE)
    return (typeof text === 'string' ? Buffer.from(text) : text) as never
  })
}, { name: 'geojson' })
