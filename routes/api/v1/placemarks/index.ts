import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, ListQuery, PlacemarkDetail, PlacemarkList } from '../../../../schemas/placemarks.ts'
import { answer, errors, fail, ref } from '../../../../schemas/common.ts'
import { getPlacemark, listPlacemarks } from '../../../../db/placemarks.ts'
import { HttpError } from '../../../../lib/errors.ts'
import { collectionText, placemarkFeature } from '../../../../lib/geo/geojson.ts'
import { PlacemarkDetailFeature, PlacemarkListCollection } from '../../../../schemas/geojson.ts'

const placemarks: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/', {
    config: { datasetCache: true, geojson: PlacemarkListCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listPlacemarks',
      summary: 'List placemarks',
      description: 'One page of placemarks, ordered by id. `limit` 1..1000 (default 100), `offset` >= 0 (default 0); values out of range answer 400. `folder` matches a folder name exactly at any level of the path. `q` keeps placemarks whose name or description holds every word of it, case-insensitively.',
      querystring: ListQuery,
      response: {
        200: answer(PlacemarkList, 'One page of placemarks, with the limit and offset applied'),
        ...errors(
          fail(400, 'A query parameter is out of range, malformed or unknown', 'querystring/limit must be <= 1000', 'querystring/offset must be >= 0', "querystring: unknown parameter 'page'"),
          429, 503)
      }
    }
  }, async (request, reply) => {
    const { limit, offset, folder, q } = request.query
    const placemarks = await listPlacemarks(app.db, { limit, offset, folder, q })
    if (request.wantsGeoJson()) return reply.geojson(collectionText(placemarks.map(placemarkFeature), { limit, offset }))
    return { placemarks, limit, offset }
  })

  app.get('/:id', {
    config: { datasetCache: true, geojson: PlacemarkDetailFeature },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getPlacemark',
      summary: 'One placemark with its extended data',
      description: 'The placemark with this id, with every ExtendedData entry it carries.',
      params: IdParams,
      response: {
        200: answer(ref(PlacemarkDetail), 'The placemark with its extended data'),
        ...errors(
          fail(400, 'The id is not an integer in 1..2147483647', 'params/id must be integer', 'params/id must be >= 1'),
          fail(404, 'No placemark has this id', 'Placemark 999999 not found'),
          429, 503)
      }
    }
  }, async (request, reply) => {
    const placemark = await getPlacemark(app.db, request.params.id)
    if (!placemark) throw new HttpError(404, `Placemark ${request.params.id} not found`)
    if (request.wantsGeoJson()) return reply.geojson(placemarkFeature(placemark))
    return placemark
  })
}

export default placemarks
