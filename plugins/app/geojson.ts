import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { GEOJSON_TYPE, wantsGeoJson } from '../../lib/geo/geojson.ts'

declare module 'fastify' {
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

/** The placemark routes' second content type, negotiated per request. */
export default fp(async function geojson (app: FastifyInstance) {
  app.decorateRequest('wantsGeoJson', function (this: FastifyRequest) {
    return wantsGeoJson((this.query as { format?: string } | undefined)?.format, this.headers.accept)
  })
  app.decorateReply('geojson', function (this: FastifyReply, text: string | Buffer) {
    this.type(GEOJSON_TYPE)
    return (typeof text === 'string' ? Buffer.from(text) : text) as never
  })
}, { name: 'geojson' })
