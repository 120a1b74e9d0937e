import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, ListQuery, PlacemarkDetail, PlacemarkList } from '../../../../schemas/placemarks.ts'
import { errors } from '../../../../schemas/common.ts'
import { getPlacemark, listPlacemarks } from '../../../../db/placemarks.ts'
import { HttpError } from '../../../../lib/errors.ts'

const placemarks: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/', {
    schema: {
      tags: ['Placemarks'],
      summary: 'List placemarks',
      description: 'Ordered by id. `limit` 1..1000 (default 100), `offset` >= 0 (default 0); values out of range answer 400. `folder` matches a folder name exactly at any level of the path.',
      querystring: ListQuery,
      response: { 200: PlacemarkList, ...errors(400, 429, 503) }
    }
  }, async (request) => {
    const { limit, offset, folder } = request.query
    return { placemarks: await listPlacemarks(app.db, { limit, offset, folder }), limit, offset }
  })

  app.get('/:id', {
    schema: {
      tags: ['Placemarks'],
      summary: 'One placemark with its extended data',
      params: IdParams,
      response: { 200: PlacemarkDetail, ...errors(400, 404, 429, 503) }
    }
  }, async (request) => {
    const placemark = await getPlacemark(app.db, request.params.id)
    if (!placemark) throw new HttpError(404, `Placemark ${request.params.id} not found`)
    return placemark
  })
}

export default placemarks
