import { Type } from '../../../lib/typebox.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyServerOptions } from 'fastify'
import { answer, errors, fail, retryAfter } from '../../../schemas/common.ts'
import { HttpError } from '../../../lib/errors.ts'
import { MAX_MERCATOR_LAT, MAX_TILE_ZOOM, TILE_FIELDS, TILE_LAYER } from '../../../lib/geo/tiles.ts'
import { TILE_BUSY_MESSAGE, TILE_MAX_PLACEMARKS, TILE_WAITING_PER_CLIENT } from '../../../plugins/app/tiles.ts'
import { schemaErrorFormatter } from '../../../plugins/app/validation.ts'
import { parseDatetime } from '../../ogc/index.ts'
import { DatetimeParam } from '../../../schemas/ogc.ts'
import type { TileFilterValues } from '../../../db/box-index-filter.ts'

export const MVT_TYPE = 'application/vnd.mapbox-vector-tile'

// One spelling per tile: `01`, `+1`, `1e0`, `0x1` and `1.0` would each be another URL of tile 1.
export const TILE_NUMBER = '^(0|[1-9][0-9]*)$'
const TILE_NUMBER_RULE = 'must be a whole number in plain decimal digits (no sign, leading zero, point, exponent or hex)'

const coordinate = (words: string, example: string) => Type.String({
  pattern: TILE_NUMBER,
  description: `The tile's ${words}, 0..2^z-1, in plain decimal digits`,
  examples: [example]
})

const TileParams = Type.Object({
  z: Type.String({ pattern: TILE_NUMBER, description: `Zoom level, 0..${MAX_TILE_ZOOM}, in plain decimal digits`, examples: ['14'] }),
  x: coordinate('column, counted from the west (180° W)', '2950'),
  y: coordinate('row, counted from the north as in XYZ (not TMS)', '6428')
})

// The filters of /ogc/collections/placemarks/items and /api/v1/placemarks, with their meaning.
const TileQuery = Type.Object({
  folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only placemarks with a folder of exactly this name at any level of their path', examples: ['Las Vegas Strip'] })),
  q: Type.Optional(Type.String({ maxLength: 500, description: 'Text search: whitespace-separated words (at most 16), each of which must appear in the name or the description, case-insensitively', examples: ['tropicana'] })),
  datetime: Type.Optional(DatetimeParam)
}, { additionalProperties: false })

type TileQueryT = { folder?: string; q?: string; datetime?: string }

function filterOf (query: TileQueryT): TileFilterValues {
  return { folder: query.folder, q: query.q === undefined || query.q.trim() === '' ? undefined : query.q, datetime: query.datetime === undefined ? undefined : parseDatetime(query.datetime) }
}

type FormatError = NonNullable<FastifyServerOptions['schemaErrorFormatter']>
// A coordinate refused by its pattern is told what to write rather than shown the pattern.
const tileErrorFormatter: FormatError = (errs, dataVar) =>
  schemaErrorFormatter(errs.map((e) => e.keyword === 'pattern' ? { ...e, message: TILE_NUMBER_RULE } : e), dataVar)

const TileJson = Type.Object({
  tilejson: Type.Literal('3.0.0', { description: 'The TileJSON version' }),
  name: Type.String({ description: 'The tileset\'s name' }),
  description: Type.String({ description: 'What the tiles hold' }),
  version: Type.String({ description: 'The dataset version the tiles show (it changes with every import)' }),
  scheme: Type.Literal('xyz', { description: 'Rows counted from the north' }),
  tiles: Type.Array(Type.String(), { description: 'The tile URL template, absolute (from PUBLIC_URL), with the filters (`folder`, `q`, `datetime`) this TileJSON was asked with' }),
  minzoom: Type.Integer({ minimum: 0, maximum: MAX_TILE_ZOOM, description: 'The lowest zoom served' }),
  maxzoom: Type.Integer({ minimum: 0, maximum: MAX_TILE_ZOOM, description: 'The highest zoom served' }),
  bounds: Type.Array(Type.Number(), { minItems: 4, maxItems: 4, description: 'The data\'s extent, west, south, east, north (degrees, WGS 84); the whole Web Mercator world when there is no placemark' }),
  vector_layers: Type.Array(Type.Object({
    id: Type.String({ description: 'The layer\'s name in the tiles' }),
    description: Type.String({ description: 'What the layer holds' }),
    minzoom: Type.Integer({ minimum: 0, maximum: MAX_TILE_ZOOM, description: 'The lowest zoom the layer is in' }),
    maxzoom: Type.Integer({ minimum: 0, maximum: MAX_TILE_ZOOM, description: 'The highest zoom the layer is in' }),
    fields: Type.Record(Type.String(), Type.String(), { description: 'Each property of the layer\'s features, with its type and meaning' })
  }), { description: 'The layers of the tiles: one, `placemarks`' })
}, {
  examples: [{
    tilejson: '3.0.0',
    name: 'placemarks',
    description: 'The placemarks as Mapbox Vector Tiles',
    version: '3',
    scheme: 'xyz',
    tiles: ['https://api.example.com/api/v1/tiles/{z}/{x}/{y}.mvt'],
    minzoom: 0,
    maxzoom: MAX_TILE_ZOOM,
    bounds: [-115.3, 36.0, -115.0, 36.3],
    vector_layers: [{ id: TILE_LAYER, description: 'One feature per placemark, or per cluster of points or of small lines and polygons', minzoom: 0, maxzoom: MAX_TILE_ZOOM, fields: { id: 'Number', name: 'String', geometry_type: 'String', folder: 'String', color: 'String', point_count: 'Number' } }]
  }]
})

const badTile = fail(400, `z, x or y is not written in plain decimal digits, z is past ${MAX_TILE_ZOOM}, x or y is past 2^z - 1, or a filter is malformed`,
  `params/z must be <= ${MAX_TILE_ZOOM}`, `params/x ${TILE_NUMBER_RULE}`, 'params/x must be <= 1 at zoom 1')
const busy = {
  ...fail(503, `The client already has ${TILE_WAITING_PER_CLIENT} tile requests waiting behind the ones being computed (TILE_CONCURRENCY_PER_CLIENT), or the database did not answer in time; try again after \`retry-after\` seconds`,
    TILE_BUSY_MESSAGE, 'The database is unavailable; try again shortly'),
  headers: retryAfter
}

const tiles: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/tiles/:z/:x/:y.mvt', {
    config: { datasetCache: true },
    schemaErrorFormatter: tileErrorFormatter,
    // Each client's tile requests take turns, a few at a time, ahead of the cache (plugins/app/tiles.ts).
    preHandler: app.tiles.admit,
    onSend: app.tiles.release,
    schema: {
      tags: ['Placemarks'],
      operationId: 'getVectorTile',
      summary: 'A vector tile of the placemarks',
      description: `Tile z/x/y (XYZ: rows from the north) as a Mapbox Vector Tile 2.1 of extent 4096, z 0..${MAX_TILE_ZOOM}, with one layer, \`placemarks\` (version 2). ` +
        'z, x and y are written in plain decimal digits (`14`, not `014`, `+14` or `1.4e1`): one URL per tile. ' +
        'Each feature is a placemark with the properties `id` (also the feature id), `name`, `geometry_type` and `folder` (the innermost folder\'s name, absent at the root), ' +
        'its resolved KML style (a StyleMap\'s `normal` pair): `color` (icon colour for points, line colour otherwise) and `fill` (polygon fill) as CSS `#rrggbbaa`, `width` (line width in pixels), `icon` (the icon\'s href), each absent when the style does not say, ' +
        'and `time_begin` / `time_end` (milliseconds since the epoch) when it has a KML time. ' +
        'At zooms below `TILE_CLUSTER_MAX_ZOOM` (default 14) the points are counted on a grid of 16 × 16 cells per tile (256 units, 32 px of a 512 px tile): a cell holding two points or more is one point feature at their mean position with `cluster: true`, `point_count`, `point_count_abbreviated` and `color` (the colour most of them share); ' +
        'a point belongs to the one cell of the one tile its coordinates fall in, so over any set of tiles the counts add up exactly, with no cap. ' +
        'At those zooms a line or polygon smaller than a cell is counted at the centre of its bounds on a grid of its own: a cell of two or more is a point feature with `cluster: true`, `shape_count`, `shape_count_abbreviated` and `color`, a cell of one draws that shape whole. ' +
        `Larger lines and polygons are clipped to the tile (with a buffer of 64 units) and simplified for the zoom; a tile shows at most ${TILE_MAX_PLACEMARKS.toLocaleString('en-US')} of them at a cluster zoom, and at most ${TILE_MAX_PLACEMARKS.toLocaleString('en-US')} placemarks at higher zooms (the first by id in its box). ` +
        '`folder`, `q` and `datetime` filter the tile as they filter the OGC items; a filtered tile is cached on its own. ' +
        `A client's tile requests are answered \`TILE_CONCURRENCY_PER_CLIENT\` (default 2) at a time; the next ${TILE_WAITING_PER_CLIENT} wait their turn and any more answer 503. ` +
        'An empty tile answers 204. Cached per dataset version (ETag, gzip). `tiles.json` describes the tileset.',
      params: TileParams,
      querystring: TileQuery,
      response: {
        200: {
          description: 'The tile (protobuf bytes)',
          content: { [MVT_TYPE]: { schema: { type: 'string', format: 'binary' } } }
        },
        204: { description: 'No placemark in this tile; no body', type: 'null' },
        ...errors(badTile, 429, busy)
      }
    }
  }, async (request, reply) => {
    const z = Number(request.params.z)
    const x = Number(request.params.x)
    const y = Number(request.params.y)
    if (z > MAX_TILE_ZOOM) throw new HttpError(400, `params/z must be <= ${MAX_TILE_ZOOM}`)
    const last = 2 ** z - 1
    if (x > last) throw new HttpError(400, `params/x must be <= ${last} at zoom ${z}`)
    if (y > last) throw new HttpError(400, `params/y must be <= ${last} at zoom ${z}`)
    const tile = await app.tiles.tile(z, x, y, filterOf(request.query))
    if (tile === null) {
      reply.code(204)
      return Buffer.alloc(0)
    }
    reply.header('content-type', MVT_TYPE)
    return tile
  })

  app.get('/tiles.json', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getTileJson',
      summary: 'The vector tiles\' TileJSON',
      description: 'TileJSON 3.0 of the placemark vector tiles: the tile URL template (absolute, from `PUBLIC_URL`, carrying the filters given here), zooms 0..22, the bounds of the data and the `placemarks` layer with its fields. ' +
        'MapLibre takes it as a vector source\'s `url`; QGIS and GDAL read the tiles from the template.',
      querystring: TileQuery,
      response: {
        200: answer(TileJson, 'The tileset\'s description'),
        ...errors(fail(400, 'A filter is malformed or a parameter unknown', 'querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end'), 429, 503)
      }
    }
  }, async (request) => {
    filterOf(request.query)
    const params = new URLSearchParams()
    for (const key of ['folder', 'q', 'datetime'] as const) if (request.query[key] !== undefined) params.set(key, request.query[key])
    const search = params.size > 0 ? `?${params.toString()}` : ''
    const b = await app.tiles.bounds()
    return {
      tilejson: '3.0.0' as const,
      name: 'placemarks',
      description: 'The placemarks as Mapbox Vector Tiles',
      version: String(app.datasetVersion.current()),
      scheme: 'xyz' as const,
      tiles: [`${app.config.PUBLIC_URL}/api/v1/tiles/{z}/{x}/{y}.mvt${search}`],
      minzoom: 0,
      maxzoom: MAX_TILE_ZOOM,
      bounds: b === null ? [-180, -MAX_MERCATOR_LAT, 180, MAX_MERCATOR_LAT] : [b.minLon, b.minLat, b.maxLon, b.maxLat],
      vector_layers: [{ id: TILE_LAYER, description: 'One feature per placemark, or per cluster of points or of small lines and polygons', minzoom: 0, maxzoom: MAX_TILE_ZOOM, fields: TILE_FIELDS }]
    }
  })
}

export default tiles
