import Fastify from 'fastify'
import pg from 'pg'
import { peerEnvelopes } from '../scale.ts'

// The box query as a GIS user would serve it: a bare Fastify 5 server over pg and a PostGIS table loaded
// by GDAL's ogr2ogr (KML driver) with its GiST index, columns as ogr2ogr made them: `id` (the feature's
// position in the document, from 1), `name`, `description`, `geom`. The candidates come from the index
// (`&&`), the exact test is ST_Intersects, the features are built by PostGIS (ST_AsGeoJSON of the row)
// and joined by Node into a FeatureCollection. A box across the antimeridian (min_lon > max_lon) is
// asked as its two halves. The pool has the size of our server's default DB_POOL_MAX (lib/config.ts),
// so that both sides put the same number of queries on the database at once.
//
// Its vector tiles are a table layer as pg_tileserv serves one, with its defaults: PostGIS encodes the
// tile (ST_AsMVT of ST_AsMVTGeom, the geometries moved to Web Mercator and clipped to the tile with a
// buffer of 256 units out of 4096), from the rows whose geometry intersects the tile and that buffer,
// at most 10,000 of them (pg_tileserv's MaxFeaturesPerTile; past them a tile is missing placemarks), with
// `id` and `name` as properties. No clusters: a low-zoom tile is its first 10,000 placemarks. An empty
// tile answers 204.
// Arguments: the connection string of the database, the pool's size (default: pg's, 10). Prints its
// port on stdout once listening.

const pool = new pg.Pool({ connectionString: process.argv[2], max: Number(process.argv[3] ?? 10) })

const where = (envelopes: number) => Array.from({ length: envelopes }, (_, i) => {
  const e = `ST_MakeEnvelope($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4}, 4326)`
  return `(geom && ${e} AND ST_Intersects(geom, ${e}))`
}).join(' OR ')
const sql = (envelopes: number) => `SELECT ST_AsGeoJSON(p.*) AS feature FROM (
  SELECT id, name, description, geom FROM placemarks WHERE ${where(envelopes)} ORDER BY id LIMIT $${4 * envelopes + 1}
) p ORDER BY p.id`
const queries = [sql(1), sql(2)]

const coordinate = (min: number, max: number) => ({ type: 'number', minimum: min, maximum: max })
const app = Fastify({ logger: false })
app.get<{ Querystring: { min_lon: number; min_lat: number; max_lon: number; max_lat: number; limit: number } }>('/api/v1/spatial/bbox', {
  schema: {
    querystring: {
      type: 'object',
      required: ['min_lon', 'min_lat', 'max_lon', 'max_lat'],
      properties: { min_lon: coordinate(-180, 180), min_lat: coordinate(-90, 90), max_lon: coordinate(-180, 180), max_lat: coordinate(-90, 90), limit: { type: 'integer', minimum: 1, maximum: 10000, default: 1000 } }
    }
  }
}, async (request, reply) => {
  const { limit, ...box } = request.query
  if (box.min_lat > box.max_lat) return reply.code(400).send({ error: 'min_lat must be <= max_lat' })
  const envelopes = peerEnvelopes(box)
  const { rows } = await pool.query<{ feature: string }>(queries[envelopes.length - 1], [...envelopes.flat(), limit])
  let body = '{"type":"FeatureCollection","features":['
  for (let i = 0; i < rows.length; i++) body += (i ? ',' : '') + rows[i].feature
  body += `],"count":${rows.length}}`
  return reply.type('application/json; charset=utf-8').send(body)
})

const TILE_SQL = `WITH bounds AS (
  SELECT ST_TileEnvelope($1, $2, $3) AS clip, ST_TileEnvelope($1, $2, $3, margin => 256.0 / 4096) AS query
), mvtgeom AS (
  SELECT ST_AsMVTGeom(ST_Transform(t.geom, 3857), bounds.clip, 4096, 256) AS geom, t.id, t.name
  FROM placemarks t, bounds
  WHERE ST_Intersects(t.geom, ST_Transform(bounds.query, 4326))
  LIMIT 10000
)
SELECT ST_AsMVT(mvtgeom.*, 'placemarks', 4096, 'geom', 'id') AS tile FROM mvtgeom`
const tileNumber = { type: 'integer', minimum: 0 }
app.get<{ Params: { z: number; x: number; y: number } }>('/api/v1/tiles/:z/:x/:y.mvt', {
  schema: { params: { type: 'object', required: ['z', 'x', 'y'], properties: { z: { ...tileNumber, maximum: 22 }, x: tileNumber, y: tileNumber } } }
}, async (request, reply) => {
  const { z, x, y } = request.params
  if (x >= 2 ** z || y >= 2 ** z) return reply.code(400).send({ error: 'x or y is past 2^z - 1' })
  const { rows } = await pool.query<{ tile: Buffer }>({ name: 'tile', text: TILE_SQL, values: [z, x, y] })
  const tile = rows[0]?.tile
  if (!tile || tile.length === 0) return reply.code(204).send()
  return reply.type('application/vnd.mapbox-vector-tile').send(tile)
})

await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address()
process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`)
process.once('SIGTERM', () => { app.close().then(() => pool.end()).finally(() => process.exit(0)) })
