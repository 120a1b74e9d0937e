import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify'
import { Counter, Gauge } from 'prom-client'
import { buildTile, entryTilePlacemark, MAX_MERCATOR_LAT, tileOf, tilePlacemarks, tileReadBox, tileRowPlacemark } from '../../lib/geo/tiles.ts'
import { majorityColour, mortonKey, tileUnits, type ClusterGrids, type GridCell } from '../../lib/geo/tile-grid.ts'
import { boundsOf, intersectsBox } from '../../lib/geo/box.ts'
import type { BoxIndex } from '../../lib/geo/box-index.ts'
import type { StyleResolver } from '../../lib/kml/resolved-style.ts'
import { datasetFacts } from '../../db/dataset-facts.ts'
import { loadStyleResolver } from '../../db/box-index-styles.ts'
import { colourGroups, countedCellGroups, countedShapes, TILE_CELLS_MAX_ZOOM, TILE_SHAPES_MAX_ZOOM } from '../../db/tile-cells.ts'
import { matchingPlacemarks, tileCellGroups, tileRows, tileShapes, type TileFilterValues } from '../../db/box-index-filter.ts'
import { withoutJit } from '../../db/without-jit.ts'
import { clientKey } from '../../lib/address-group.ts'
import { HttpError } from '../../lib/errors.ts'
import type { Box } from '../../lib/geo/box.ts'

declare module 'fastify' {
  interface FastifyInstance {
    tiles: {
      /** Tile z/x/y's bytes (Mapbox Vector Tile) of the placemarks matching the filters, or null when it has no feature. */
      tile(z: number, x: number, y: number, filter?: TileFilterValues): Promise<Buffer | null>
      /** The dataset's styles, resolved (cached per dataset version). */
      styles(): Promise<StyleResolver>
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
 * At zooms with clusters, a tile's points, and its lines and polygons smaller than a grid cell, are its
 * grids' cells (exact, no cap); the larger lines and polygons it draws are at most this many (the first by
 * id among those crossing it: only shapes overlapping by the thousands reach it). At zooms without
 * clusters, a tile shows at most this many placemarks (the first by id in its box).
 */
export const TILE_MAX_PLACEMARKS = 20_000

// Filtered point grids kept per dataset version (each up to 14 bytes per matching point).
const FILTERED_GRIDS = 4
// The placemarks read from the database for one tile when no index is loaded: every one in its box.
const ALL = 2_147_483_647

// At most this many placemarks' tiles, at every zoom to two past the clusters', warm the tile code up (beforeUse below).
const WARM_PLACEMARKS = 8

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
  const capped = new Counter({
    name: 'tiles_capped_total',
    help: `Tiles computed with some of their placemarks left out: more than ${TILE_MAX_PLACEMARKS} lines and polygons at a cluster zoom (shapes), or placemarks at a zoom without clusters (placemarks)`,
    labelNames: ['kind'],
    registers: [registry]
  })
  // The first TILE_MAX_PLACEMARKS of a list asked with one more: the tile is counted as capped when there was more.
  const bounded = <T> (list: T[], kind: 'shapes' | 'placemarks'): T[] => {
    if (list.length <= TILE_MAX_PLACEMARKS) return list
    capped.inc({ kind })
    return list.slice(0, TILE_MAX_PLACEMARKS)
  }
  const refused = new Counter({ name: 'tile_requests_refused_total', help: 'Tile requests refused 503 because their client already had TILE_WAITING_PER_CLIENT waiting', registers: [registry] })

  // The resolved styles and the filters' matches of the current dataset version.
  let styles: { version: number; resolver: Promise<StyleResolver> } | null = null
  const stylesOf = (): Promise<StyleResolver> => {
    const version = app.datasetVersion.current()
    if (styles?.version !== version) {
      const resolver = loadStyleResolver(app.db)
      styles = { version, resolver }
      resolver.catch(() => { if (styles?.resolver === resolver) styles = null })
    }
    return styles.resolver
  }
  interface Match { flags: Uint8Array; grids: WeakMap<BoxIndex, ClusterGrids> }
  let matches: { version: number; byKey: Map<string, Promise<Match>> } = { version: -1, byKey: new Map() }
  const matchOf = (filter: TileFilterValues): Promise<Match> => {
    const version = app.datasetVersion.current()
    if (matches.version !== version) matches = { version, byKey: new Map() }
    const key = JSON.stringify([filter.folder ?? null, filter.q ?? null, filter.datetime ?? null])
    let match = matches.byKey.get(key)
    if (match === undefined) {
      match = matchingPlacemarks(app.db, filter).then((flags) => ({ flags, grids: new WeakMap() }))
      const { byKey } = matches
      match.catch(() => byKey.delete(key))
      byKey.set(key, match)
      // The least recently asked goes first.
      if (byKey.size > FILTERED_GRIDS) byKey.delete(byKey.keys().next().value!)
    } else {
      matches.byKey.delete(key)
      matches.byKey.set(key, match)
    }
    return match
  }
  const filtered = (filter: TileFilterValues | undefined) =>
    filter !== undefined && (filter.folder !== undefined || filter.q !== undefined || filter.datetime !== undefined)

  // A tile from the loaded index: points from its grid at a cluster zoom, entries of the tile's box otherwise.
  const fromIndex = (index: BoxIndex, resolver: StyleResolver, match: Match | null, z: number, x: number, y: number): Buffer | null => {
    const keep = match === null ? undefined : (i: number) => match.flags[index.idOf(i)] === 1
    const box = tileReadBox(z, x, y)
    if (z >= clusterMaxZoom) {
      const placemarks = bounded(index.entriesInBox(box, TILE_MAX_PLACEMARKS + 1, keep), 'placemarks').map((i) => entryTilePlacemark(index, i, resolver))
      return buildTile({ drawn: placemarks }, z, x, y)
    }
    let grid = index.grid
    if (match !== null) {
      grid = match.grids.get(index) ?? index.grid.subset(keep!)
      match.grids.set(index, grid)
    }
    const cells = grid.cells(z, x, y)
    // The lines and polygons larger than a cell; the smaller ones are in the cells.
    const shapes = bounded(index.shapesIn(box, keep, TILE_MAX_PLACEMARKS + 1, z), 'shapes').map((i) => entryTilePlacemark(index, i, resolver))
    const lone = [...cells.points, ...cells.shapes].filter((c) => c.count === 1).map((c) => entryTilePlacemark(index, c.item, resolver))
    const clusters = (list: GridCell[]) => list.filter((c) => c.count > 1)
    return buildTile({ drawn: shapes, lone, clusters: clusters(cells.points), shapeClusters: clusters(cells.shapes) }, z, x, y)
  }

  // The same tile from the database: at a zoom without clusters the box query's placemarks, at a cluster
  // zoom the points counted in PostgreSQL on the same grid (rows per cell and colour, not per point: the
  // same cells, counts, centres and colours as the index's) and the lines and polygons crossing the tile.
  const fromDatabase = async (resolver: StyleResolver, filter: TileFilterValues, match: Match | null, z: number, x: number, y: number): Promise<Buffer | null> => {
    const box = tileReadBox(z, x, y)
    if (z >= clusterMaxZoom) {
      const read = tilePlacemarks(await app.boxIndex.query(box, match === null ? TILE_MAX_PLACEMARKS + 1 : ALL), resolver)
      return buildTile({ drawn: bounded(match === null ? read : read.filter((p) => match.flags[p.id] === 1), 'placemarks') }, z, x, y)
    }
    // Unfiltered, a cluster zoom's cells and a low zoom's large shapes were counted by the import (db/tile-cells.ts): the same groups and shapes.
    const unfiltered = !filtered(filter)
    const [groups, shapeRows] = await Promise.all([
      unfiltered && z <= TILE_CELLS_MAX_ZOOM
        ? countedCellGroups(app.db, z, x, y)
        : withoutJit(app.dbHandle, (db) => tileCellGroups(db, z, x, y, box, filter)).then((rows) => colourGroups(rows, resolver)),
      unfiltered && z <= TILE_SHAPES_MAX_ZOOM
        ? countedShapes(app.db, z, box, TILE_MAX_PLACEMARKS + 1)
        : withoutJit(app.dbHandle, (db) => tileShapes(db, z, box, filter, TILE_MAX_PLACEMARKS + 1))
    ])
    const shapes = shapeRows.map((r) => tileRowPlacemark(r, resolver)).filter((p) => intersectsBox(p.geometry, box))
    // Per kind (points, and shapes smaller than a cell), the cells in the grid's order (Morton keys), as the index gives them.
    const cellsOf = (point: boolean) => {
      const byCell = new Map<number, { count: number; sx: number; sy: number; colours: Map<string, number>; id: number }>()
      for (const g of groups) {
        if (g.point !== point) continue
        const key = mortonKey(g.cx, g.cy)
        let cell = byCell.get(key)
        if (cell === undefined) byCell.set(key, cell = { count: 0, sx: 0, sy: 0, colours: new Map(), id: g.id })
        cell.count += g.n
        cell.sx += g.sum_x
        cell.sy += g.sum_y
        cell.id = Math.min(cell.id, g.id)
        cell.colours.set(g.color, (cell.colours.get(g.color) ?? 0) + g.n)
      }
      return [...byCell.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c)
    }
    const [pointCells, shapeCells] = [cellsOf(true), cellsOf(false)]
    const loneIds = [...pointCells, ...shapeCells].filter((c) => c.count === 1).map((c) => c.id)
    const lone = new Map((await tileRows(app.db, loneIds)).map((r) => tileRowPlacemark(r, resolver)).map((p) => [p.id, p]))
    const clusters = (cells: typeof pointCells): GridCell[] => cells.filter((c) => c.count > 1).map((c) => ({
      count: c.count, x: tileUnits(c.sx, c.count, z, x), y: tileUnits(c.sy, c.count, z, y), color: majorityColour(c.colours), item: c.id
    }))
    return buildTile({
      drawn: bounded(shapes, 'shapes'),
      lone: loneIds.map((id) => lone.get(id)).filter((p) => p !== undefined),
      clusters: clusters(pointCells),
      shapeClusters: clusters(shapeCells)
    }, z, x, y)
  }

  // A new process runs the tile code slowly at first: V8 compiles its hot paths only once they have run
  // for a while. Of the bench's 831 cold tiles at 32 connections on a fresh 1M server, the first eighth
  // waited 150–230 ms on average and the rest 65–100, and the p99 was theirs. Before the process's
  // first index is put to use, the tiles of a few placemarks spread through it, at every zoom, are built
  // and dropped: at 1M 136 tiles, 0.26 s of start-up in turns of the event loop (the index's load took
  // 11–29 s), once per process. More placemarks warmed more (32: a p99 of 192 ms against 235 with 8)
  // but kept the V8 heap they grew: 12 MiB more RSS on Node 24, against a budget of 350 MiB at 1M.
  let warmed = false
  app.boxIndex.beforeUse(async (index) => {
    if (warmed || index.size === 0) return
    warmed = true
    const resolver = await stylesOf()
    // One placemark per thousand up to WARM_PLACEMARKS: a small dataset's tiles cost little either way.
    const placemarks = Math.min(WARM_PLACEMARKS, Math.ceil(index.size / 1000))
    for (let k = 0; k < placemarks; k++) {
      // A corner of its bounds: a point's own position.
      const { minLon, minLat } = boundsOf(entryTilePlacemark(index, Math.floor(((k + 0.5) * index.size) / placemarks), resolver).geometry)
      for (let z = 0; z <= clusterMaxZoom + 2; z++) {
        const tile = tileOf(minLon, minLat, z)
        if (tile === null) break
        fromIndex(index, resolver, null, z, tile.x, tile.y)
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
    }
  })

  app.decorate('tiles', {
    async tile (z: number, x: number, y: number, filter?: TileFilterValues) {
      // A turn of the event loop first: requests waiting on I/O (another client's) get in between two tiles.
      await new Promise<void>((resolve) => setImmediate(resolve))
      const resolver = await stylesOf()
      const index = app.boxIndex.index()
      // The matching ids, where the placemarks are read unfiltered (the index, or the box query at a zoom
      // without clusters); the database's cell counts filter in their own query.
      const match = filtered(filter) && (index !== null || z >= clusterMaxZoom) ? await matchOf(filter!) : null
      return index ? fromIndex(index, resolver, match, z, x, y) : await fromDatabase(resolver, filter ?? {}, match, z, x, y)
    },
    styles: stylesOf,
    async bounds () {
      // The extent the OGC collection gives, within Web Mercator's latitudes.
      const extent = (await datasetFacts(app.db))?.facts.extent ?? null
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
