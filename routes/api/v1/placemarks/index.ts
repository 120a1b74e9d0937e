import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, ListQuery, PlacemarkDetail, PlacemarkList } from '../../../../schemas/placemarks.ts'
import { answer, errors, fail, ref } from '../../../../schemas/common.ts'
import { getPlacemark, listPlacemarks } from '../../../../db/placemarks.ts'
import { HttpError } from '../../../../lib/errors.ts'
import { collectionText, GEOJSON_TYPE, styledPlacemarkFeature } from '../../../../lib/geo/geojson.ts'
import { countMatching } from '../../../../db/ogc.ts'
import { PlacemarkDetailFeature, PlacemarkListCollection } from '../../../../schemas/geojson.ts'

const placemarks: FastifyPluginAsyncTypebox = async (app) => {
  // Absolute, from the configured public address: the answer is cached and shared by every client.
  const listUrl = `${app.config.PUBLIC_URL}/api/v1/placemarks`
  const pageUrl = (q: { limit: number; offset: number; folder?: string; q?: string }) => {
    const params = new URLSearchParams({ limit: String(q.limit), offset: String(q.offset) })
    if (q.folder !== undefined) params.set('folder', q.folder)
    if (q.q !== undefined) params.set('q', q.q)
    params.set('f', 'geojson')
    return `${listUrl}?${params}`
  }
  app.get('/', {
    config: { datasetCache: true, geojson: PlacemarkListCollection },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listPlacemarks',
      summary: 'List placemarks',
      description: 'One page of placemarks, ordered by id. `limit` 1..1000 (default 100), `offset` >= 0 (default 0); values out of range answer 400. `folder` matches a folder name exactly at any level of the path. `q` keeps placemarks whose name or description holds every word of it, case-insensitively. ' +
        'The GeoJSON answer also carries, as the OGC items do, `numberMatched` (the placemarks matching over all pages), `numberReturned` and `self`/`next`/`prev` links, so that GIS clients can tell a page from the whole.',
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
    if (request.wantsGeoJson()) {
      // As the OGC items: how many match in all, and the links a GIS client follows to the other pages.
      const matched = await countMatching(app.db, { folder, q })
      const link = (at: number, rel: string) => ({ href: pageUrl({ limit, offset: at, folder, q }), rel, type: GEOJSON_TYPE })
      const links = [link(offset, 'self')]
      if (offset + placemarks.length < matched) links.push(link(offset + limit, 'next'))
      if (offset > 0) links.push(link(Math.max(0, offset - limit), 'prev'))
      return reply.geojson(collectionText(placemarks.map(styledPlacemarkFeature(await app.tiles.styles())), { limit, offset, numberMatched: matched, numberReturned: placemarks.length, links }))
    }
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
    if (request.wantsGeoJson()) return reply.geojson(styledPlacemarkFeature(await app.tiles.styles())(placemark))
    return placemark
  })
}

export default placemarks
