import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BboxQuery, BboxResponse } from '../../../../schemas/placemarks.ts'
import { answer, errors, fail } from '../../../../schemas/common.ts'
import { bboxBody, bboxGeoJson } from '../../../../lib/placemarks/box-answer.ts'
import { BboxCollection } from '../../../../schemas/geojson.ts'
import { HttpError } from '../../../../lib/errors.ts'

const spatial: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/bbox', {
    // Answered from the in-memory box index; random boxes would only fill the answer cache, so answers are
    // compressed afresh (the cache's negotiation) and carry no ETag.
    config: { geojson: BboxCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listPlacemarksInBbox',
      summary: 'Placemarks intersecting a bounding box',
      description: 'Placemarks whose geometry intersects the box, boundary inclusive, as PostGIS `ST_Intersects` means it: a line crossing the box counts even with no vertex inside, and a box inside a polygon counts (but not one inside a hole). ' +
        'Ordered by id. All four bounds are required; latitudes in [-90, 90], longitudes in [-180, 180], `min_lat <= max_lat`. ' +
        '`min_lon > max_lon` means the box crosses the antimeridian. `limit` 1..10000 (default 1000).',
      querystring: BboxQuery,
      response: {
        200: answer(BboxResponse, 'The placemarks intersecting the box (at most `limit`), with the box asked for'),
        ...errors(
          fail(400, 'A bound is missing, out of range or not a number, min_lat > max_lat, or an unknown parameter',
            'querystring must have required property \'min_lon\'', 'querystring/min_lat must be <= 90', 'querystring/min_lat must be <= max_lat', 'querystring/limit must be <= 10000'),
          429, 503)
      }
    }
  }, async (request, reply) => {
    const { min_lon, min_lat, max_lon, max_lat, limit } = request.query
    if (min_lat > max_lat) throw new HttpError(400, 'querystring/min_lat must be <= max_lat')
    const box = { minLon: min_lon, minLat: min_lat, maxLon: max_lon, maxLat: max_lat }
    const summaries = await app.boxIndex.query(box, limit)
    const bbox = { min_lon, min_lat, max_lon, max_lat }
    // Bytes serialized by one function on both paths (the schema documents them), gzipped for clients that take it.
    if (request.wantsGeoJson()) return app.datasetCache.sendFresh(request, reply, reply.geojson(bboxGeoJson(summaries, bbox, await app.tiles.styles())), String(reply.getHeader('content-type')))
    return app.datasetCache.sendFresh(request, reply, bboxBody(summaries, bbox), 'application/json; charset=utf-8')
  })
}

export default spatial
