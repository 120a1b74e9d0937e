/**
 * The tiles' low zooms counted once per dataset version (db/tile-cells.ts): at every zoom up to
 * TILE_CELLS_MAX_ZOOM, every tile's counted groups (and up to TILE_SHAPES_MAX_ZOOM its large shapes) are
 * exactly what the tile's own query gives (db/box-index-filter.ts), merged by colour, for points anywhere (tile edges, ±180°, past the Web Mercator limits)
 * and lines and polygons of every size from metres to a continent (each counted in cells up to the zoom
 * where it is no longer smaller than one); an import replaces them in its transaction, and a failed one
 * leaves them as they were; on PostgreSQL and PGlite.
 */
import t, { type Test } from 'tap'
import { Readable } from 'node:stream'
import type { DatabaseHandle } from '../../db/handle.ts'
import { openTestDatabase } from '../helper.ts'
import { importPlacemarks } from '../../db/placemark-import.ts'
import { tileCellGroups, tileShapes } from '../../db/box-index-filter.ts'
import { colourGroups, countedCellGroups, countedShapes, fillTileCells, TILE_CELLS_MAX_ZOOM, TILE_SHAPES_MAX_ZOOM, type CellGroup } from '../../db/tile-cells.ts'
import { loadStyleResolver } from '../../db/box-index-styles.ts'
import { tileReadBox } from '../../lib/geo/tiles.ts'
import { mulberry32 } from '../../scripts/generate-kml.ts'
import { CompiledQuery, sql } from '../../db/kysely.ts'

const MAX_LAT = 85.0511287798066
const tileLon = (x: number, z: number) => (x / 2 ** z) * 360 - 180
const tileLat = (y: number, z: number) => (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / 2 ** z))) * 180) / Math.PI

function datasetKml (seed: number): string {
  const rand = mulberry32(seed)
  const styles = ['a', 'b', 'c', '']
  let kml = '<?xml version="1.0" encoding="UTF-8"?>\n<kml xmlns="http://www.opengis.net/kml/2.2"><Document>\n'
  // Three styles, two line colours (b and c share one: their cells count them together) and two icon colours (none for a and b).
  for (const s of styles.slice(0, 3)) kml += `<Style id="${s}">${s === 'c' ? '<IconStyle><color>ff0000ff</color></IconStyle>' : ''}<LineStyle><color>ff00ff0${s === 'a' ? 0 : 1}</color></LineStyle></Style>\n`
  const style = (k: number) => (styles[k % 4] ? `<styleUrl>#${styles[k % 4]}</styleUrl>` : '')
  const point = (k: number, lon: number, lat: number) => `<Placemark><name>P${k}</name>${style(k)}<Point><coordinates>${lon},${lat},0</coordinates></Point></Placemark>\n`
  let k = 0
  // Points: dense places, the whole world, tile edges and corners at every counted zoom, the world's edges.
  for (let i = 0; i < 600; i++) {
    const [lon, lat, spread] = i % 3 === 0 ? [(rand() - 0.5) * 360, (rand() - 0.5) * 178, 0] : i % 3 === 1 ? [-115.17, 36.11, 0.8] : [151.21, -33.87, 3]
    kml += point(k++, Math.max(-180, Math.min(180, lon + (rand() - 0.5) * spread)), lat + (rand() - 0.5) * spread)
  }
  for (let z = 1; z <= TILE_CELLS_MAX_ZOOM + 1; z++) {
    const n = 2 ** z
    const x = Math.floor(n * 0.3)
    const y = Math.floor(n * 0.4)
    for (let dx = 0; dx <= 1; dx++) for (let dy = 0; dy <= 1; dy++) kml += point(k++, tileLon(x + dx, z), tileLat(y + dy, z))
  }
  for (const [lon, lat] of [[180, 0], [-180, 0], [0, MAX_LAT], [0, -MAX_LAT], [100, 85.06], [-100, -86], [180, MAX_LAT], [-180, -MAX_LAT]]) kml += point(k++, lon, lat)
  // Lines and polygons from 10 m to 80° across, anywhere, some across the latitude limits.
  for (let i = 0; i < 300; i++) {
    const size = 10 ** (-4 + rand() * 5.9)
    const lon = (rand() - 0.5) * (360 - size) - size / 2
    const lat = Math.max(-89, Math.min(89 - size, (rand() - 0.5) * 178))
    const geometry = i % 2 === 0
      ? `<LineString><coordinates>${lon},${lat},0 ${lon + size},${lat + size * 0.7},0</coordinates></LineString>`
      : `<Polygon><outerBoundaryIs><LinearRing><coordinates>${lon},${lat},0 ${lon + size},${lat},0 ${lon + size},${lat + size},0 ${lon},${lat},0</coordinates></LinearRing></outerBoundaryIs></Polygon>`
    kml += `<Placemark><name>S${k++}</name>${style(i)}${geometry}</Placemark>\n`
  }
  return kml + '</Document></kml>\n'
}

const key = (g: CellGroup) => JSON.stringify([g.cx, g.cy, g.point, g.color, g.n, g.sum_x, g.sum_y, g.id])

/**
 * The tiles of the counted zooms up to `maxZoom` that hold a counted row (every one up to zoom 4, every
 * fourth above, in the order of z, x, y), the tiles around the edge points, and some empty ones: counted
 * against queried.
 */
async function compareAll (t: Test, handle: DatabaseHandle, maxZoom = TILE_CELLS_MAX_ZOOM) {
  const { rows } = await sql<{ z: number; x: number; y: number }>`SELECT DISTINCT z, x, y FROM tile_cells WHERE z <= ${maxZoom} ORDER BY 1, 2, 3`.execute(handle.db)
  const tiles = rows.filter((r, i) => r.z <= 4 || i % 4 === 0).map((r) => [r.z, r.x, r.y])
  for (let z = 0; z <= maxZoom; z++) {
    const [x, y] = [Math.floor(2 ** z * 0.3), Math.floor(2 ** z * 0.4)]
    tiles.push([z, 0, 0], [z, 2 ** z - 1, 2 ** z - 1], [z, Math.floor(2 ** z / 3), Math.floor(2 ** z / 5)], [z, x, y], [z, Math.max(0, x - 1), Math.max(0, y - 1)])
  }
  const resolver = await loadStyleResolver(handle.db)
  let groups = 0
  let shapes = 0
  let differ = 0
  for (const [z, x, y] of tiles) {
    const box = tileReadBox(z, x, y)
    const [counted, queried] = [(await countedCellGroups(handle.db, z, x, y)).map(key).sort(), colourGroups(await tileCellGroups(handle.db, z, x, y, box, {}), resolver).map(key).sort()]
    const [countedLarge, queriedLarge] = z <= TILE_SHAPES_MAX_ZOOM ? [await countedShapes(handle.db, z, box, 100_000), await tileShapes(handle.db, z, box, {}, 100_000)] : [[], []]
    if (JSON.stringify(counted) !== JSON.stringify(queried) || JSON.stringify(countedLarge) !== JSON.stringify(queriedLarge)) {
      if (differ++ < 3) t.same({ z, x, y, counted, countedLarge: countedLarge.length }, { z, x, y, counted: queried, countedLarge: queriedLarge.length }, `tile ${z}/${x}/${y}`)
    }
    groups += counted.length
    shapes += countedLarge.length
  }
  t.equal(differ, 0, `${tiles.length} tiles at zooms 0–${maxZoom}: counted groups and large shapes equal the tiles' own queries`)
  return { groups, shapes }
}

for (const kind of ['postgres', 'pglite'] as const) {
  t.test(`counted low zooms on ${kind}`, async (t) => {
    const handle = await openTestDatabase(t, kind)
    await importPlacemarks(handle, Readable.from([datasetKml(3)]), { timeZone: 'UTC', source: 'cells.kml' })
    const { groups, shapes } = await compareAll(t, handle)
    t.ok(groups > 1000, `the tiles' groups were compared (${groups})`)
    t.ok(shapes > 20, `large shapes were compared (${shapes})`)
    // Every point of the dataset is counted once at each zoom (the ones within the Web Mercator limits).
    const { rows: perZoom } = await sql<{ z: number; points: number }>`
      SELECT z, sum(n)::int AS points FROM tile_cells WHERE point GROUP BY z ORDER BY z`.execute(handle.db)
    const { rows: [{ inside }] } = await sql<{ inside: number }>`
      SELECT count(*)::int AS inside FROM placemarks WHERE geometry_type = 'Point' AND abs(max_lat) <= ${MAX_LAT}`.execute(handle.db)
    t.same(perZoom.map((r) => r.points), Array.from({ length: TILE_CELLS_MAX_ZOOM + 1 }, () => inside), 'each zoom counts every point within the limits once')

    // The same rows counted from the served table (as migration 026 does for a database upgraded in place).
    const before = await sql<{ rows: string }>`SELECT count(*)::text AS rows, sum(n)::text AS n, sum(sum_x)::text AS sx FROM tile_cells`.execute(handle.db)
    await fillTileCells((text, values) => handle.db.executeQuery(CompiledQuery.raw(text, values ?? [])), 'placemarks')
    const after = await sql<{ rows: string }>`SELECT count(*)::text AS rows, sum(n)::text AS n, sum(sum_x)::text AS sx FROM tile_cells`.execute(handle.db)
    t.same(after.rows, before.rows, 'counted from the served table: the same rows')

    // A new import replaces them; a failed one leaves them.
    await importPlacemarks(handle, Readable.from([datasetKml(4)]), { timeZone: 'UTC', source: 'cells-2.kml' })
    const replaced = await sql<{ rows: string }>`SELECT count(*)::text AS rows, sum(n)::text AS n, sum(sum_x)::text AS sx FROM tile_cells`.execute(handle.db)
    t.not(JSON.stringify(replaced.rows), JSON.stringify(before.rows), 'the next import counted its own placemarks')
    await compareAll(t, handle, 4)
    await t.rejects(importPlacemarks(handle, Readable.from([datasetKml(5).slice(0, 5000) + '<Placemark><Point><coordinates>x</coordinates>']), { timeZone: 'UTC', source: 'broken.kml' }))
    const kept = await sql<{ rows: string }>`SELECT count(*)::text AS rows, sum(n)::text AS n, sum(sum_x)::text AS sx FROM tile_cells`.execute(handle.db)
    t.same(kept.rows, replaced.rows, 'a failed import left the counted cells as they were')
  })
}
