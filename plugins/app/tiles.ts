import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { buildTile, MAX_MERCATOR_LAT, tilePlacemarks, tileReadBox } from '../../lib/geo/tiles.ts'
import { placemarkExtent } from '../../db/ogc.ts'
import type { Box } from '../../lib/geo/box.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tiles: {
      /** Tile z/x/y's bytes (Mapbox Vector Tile), or null when it has no feature. */
      tile(z: number, x: number, y: number): Promise<Buffer | null>
      /** The bounds of the data, within Web Mercator's latitudes, or null for an empty dataset. */
      bounds(): Promise<Box | null>
    }
  }
}

/**
 * At most this many placemarks are read for one tile (the first by id in its box): a world tile of a
 * million placemarks costs what one of 20 000 does. Clustering keeps the low zooms' tiles small.
 */
export const TILE_MAX_PLACEMARKS = 20_000

/**
 * Vector tiles from the box query (the in-process index when loaded, the database otherwise: the same
 * placemarks either way); the routes cache each tile per dataset version.
 */
export default fp(async function tiles (app: FastifyInstance) {
  const clusterMaxZoom = app.config.TILE_CLUSTER_MAX_ZOOM
  app.decorate('tiles', {
    async tile (z: number, x: number, y: number) {
      const summaries = await app.boxIndex.query(tileReadBox(z, x, y), TILE_MAX_PLACEMARKS)
      return buildTile(tilePlacemarks(summaries), z, x, y, clusterMaxZoom)
    },
    async bounds () {
      // The extent the OGC collection gives, within Web Mercator's latitudes.
      const extent = await placemarkExtent(app.db)
      if (extent === null) return null
      const [minLon, minLat, maxLon, maxLat] = extent
      const clamp = (lat: number) => Math.max(-MAX_MERCATOR_LAT, Math.min(MAX_MERCATOR_LAT, lat))
      return { minLon, minLat: clamp(minLat), maxLon, maxLat: clamp(maxLat) }
    }
  })
}, { name: 'tiles', dependencies: ['config', 'db', 'box-index'] })
