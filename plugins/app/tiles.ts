import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify'
import { Counter, Gauge } from 'prom-client'
import { buildTile, MAX_MERCATOR_LAT, tilePlacemarks, tileReadBox } from '../../lib/geo/tiles.ts'
import { placemarkExtent } from '../../db/ogc.ts'
import { clientKey } from '../../lib/address-group.ts'
import { HttpError } from '../../lib/errors.ts'
import type { Box } from '../../lib/geo/box.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tiles: {
      /** Tile z/x/y's bytes (Mapbox Vector Tile), or null when it has no feature. */
      tile(z: number, x: number, y: number): Promise<Buffer | null>
      /** The bounds of the data, within Web Mercator's latitudes, or null for an empty dataset. */
      bounds(): Promise<Box | null>
      /**
       * The tile route's preHandler: the request's turn among its client's tile requests (at most
       * TILE_CONCURRENCY_PER_CLIENT at once, the next TILE_WAITING_PER_CLIENT waiting), or 503.
       */
      admit: preHandlerHookHandler
      /** The tile route's onSend: the request's answer is ready, its turn goes to the client's next one. */
      release: onSendHookHandler
    }
  }
}

/**
 * At most this many placemarks are read for one tile (the first by id in its box): a world tile of a
 * million placemarks costs what one of 20 000 does. Clustering keeps the low zooms' tiles small.
 */
export const TILE_MAX_PLACEMARKS = 20_000

/** Tile requests of one client that may wait for a turn; past them the client is answered 503. */
export const TILE_WAITING_PER_CLIENT = 64

export const TILE_BUSY_MESSAGE = 'Too many tile requests from this client at once; try again shortly'

interface ClientTurns { active: number; waiting: (() => void)[] }

/**
 * Vector tiles from the box query (the in-process index when loaded, the database otherwise: the same
 * placemarks either way); the routes cache each tile per dataset version. A cold tile costs tens to
 * hundreds of milliseconds of CPU, so each client (an address, an IPv6 /64, as the rate limiter counts
 * it) has only a few tile requests under way at once and a bounded line of them waiting: a client
 * asking for hundreds of cold tiles queues behind itself, and the shared computation queue holds at
 * most a few of its requests ahead of anyone else's.
 */
export default fp(async function tiles (app: FastifyInstance) {
  const clusterMaxZoom = app.config.TILE_CLUSTER_MAX_ZOOM
  const perClient = app.config.TILE_CONCURRENCY_PER_CLIENT
  const keyOf = clientKey()
  const clients = new Map<string, ClientTurns>()
  // The client each request under way was counted against (its address is gone once its socket is).
  const turns = new WeakMap<FastifyRequest, string>()
  let active = 0
  let waiting = 0

  const { registry } = app.appMetrics
  registry.registerMetric(new Gauge({
    name: 'tile_requests',
    help: 'Tile requests under way: active (holding one of their client\'s TILE_CONCURRENCY_PER_CLIENT turns: computed or answered now) or waiting for a turn',
    labelNames: ['state'],
    registers: [],
    collect () {
      this.set({ state: 'active' }, active)
      this.set({ state: 'waiting' }, waiting)
    }
  }))
  const refused = new Counter({ name: 'tile_requests_refused_total', help: 'Tile requests refused 503 because their client already had TILE_WAITING_PER_CLIENT waiting', registers: [registry] })

  app.decorate('tiles', {
    async tile (z: number, x: number, y: number) {
      // A turn of the event loop first: requests waiting on I/O (another client's) get in between two tiles.
      await new Promise<void>((resolve) => setImmediate(resolve))
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
    },
    admit (request, _reply, done) {
      const key = keyOf(request.ip)
      let client = clients.get(key)
      if (client === undefined) clients.set(key, client = { active: 0, waiting: [] })
      const start = () => {
        active++
        turns.set(request, key)
        done()
      }
      if (client.active < perClient) {
        client.active++
        start()
      } else if (client.waiting.length < TILE_WAITING_PER_CLIENT) {
        waiting++
        // release() hands its turn over as it is: the client's active count stays.
        client.waiting.push(() => {
          waiting--
          start()
        })
      } else {
        refused.inc()
        done(new HttpError(503, TILE_BUSY_MESSAGE, { 'retry-after': '1' }))
      }
    },
    release (request, _reply, payload, done) {
      const key = turns.get(request)
      if (key !== undefined) {
        turns.delete(request)
        active--
        const client = clients.get(key)!
        const next = client.waiting.shift()
        // The turn goes on at the next turn of the event loop, not inside this answer's hooks.
        if (next !== undefined) setImmediate(next)
        else if (--client.active === 0) clients.delete(key)
      }
      done(null, payload)
    }
  })
}, { name: 'tiles', dependencies: ['config', 'db', 'metrics', 'box-index'] })
