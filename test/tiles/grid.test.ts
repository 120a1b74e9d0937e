/**
 * The tiles' point grid and style resolution, without a server: every tile's cells, their counts,
 * centres and colours against a count done point by point; KML colours and StyleMaps resolved.
 */
import t from 'tap'
import { GRID_LEVEL, gridCell, MAX_MERCATOR_LAT, mortonKey, Palette, PointGrid, shapeLevel, shapeOnGrid } from '../../lib/geo/tile-grid.ts'
import { kmlColorToCss, StyleResolver } from '../../lib/kml/resolved-style.ts'
import { mulberry32 } from '../../scripts/generate-kml.ts'

t.test('grid cells: exact counts, one cell of one tile per point, at every zoom', async (t) => {
  const rand = mulberry32(11)
  const positions: [number, number][] = []
  for (let k = 0; k < 20_000; k++) {
    positions.push(k % 4 === 0 ? [(rand() - 0.5) * 360, (rand() - 0.5) * 170] : [-115.17 + (rand() - 0.5) * 0.3, 36.1 + (rand() - 0.5) * 0.3])
  }
  positions.push([180, 0], [-180, 0], [0, MAX_MERCATOR_LAT], [0, -MAX_MERCATOR_LAT], [180, -MAX_MERCATOR_LAT], [0, 0], [0, 0], [90, 85.1])
  const palette = new Palette()
  const colourNames = ['#ff0000ff', '#00ff00ff', null]
  const cells: [number, number][] = []
  const items: number[] = []
  const colours: number[] = []
  positions.forEach(([lon, lat], k) => {
    const cell = gridCell(lon, lat)
    if (cell === null) return
    cells.push(cell)
    items.push(k)
    colours.push(palette.number(colourNames[k % 3 === 0 ? 0 : k % 3 === 1 ? 1 : 2]))
  })
  t.equal(cells.length, positions.length - 1, 'the point past 85.05° is on no cell')
  const grid = PointGrid.build({ x: Uint32Array.from(cells, (c) => c[0]), y: Uint32Array.from(cells, (c) => c[1]), items: Uint32Array.from(items), colours: Uint16Array.from(colours), count: cells.length }, palette.colours)
  for (const z of [0, 1, 2, 3, 4, 7, 10, 13, 16, 22]) {
    // The tiles holding points, by the points' own cells.
    const scale = 2 ** (GRID_LEVEL - z)
    const byTile = new Map<string, number[]>()
    cells.forEach(([x, y], k) => {
      const key = `${Math.floor(x / scale)}/${Math.floor(y / scale)}`
      const list = byTile.get(key)
      if (list) list.push(k)
      else byTile.set(key, [k])
    })
    let total = 0
    let wrong = 0
    for (const [key, members] of byTile) {
      const [tx, ty] = key.split('/').map(Number)
      const found = grid.cells(z, tx, ty)
      const sum = found.reduce((n, c) => n + c.count, 0)
      total += sum
      if (sum !== members.length || found.length > 256) wrong++
      // Each cell against the points counted one by one: the same counts.
      const cellScale = scale / 16
      const perCell = new Map<string, number>()
      for (const k of members) {
        const key = `${Math.floor(cells[k][0] / cellScale)}/${Math.floor(cells[k][1] / cellScale)}`
        perCell.set(key, (perCell.get(key) ?? 0) + 1)
      }
      const want = [...perCell.values()].sort((a, b) => a - b).join()
      if (found.map((c) => c.count).sort((a, b) => a - b).join() !== want) wrong++
      for (const c of found) {
        if (c.count === 1 && !members.some((k) => items[k] === c.item)) wrong++
        if (c.x < 0 || c.x > 4096 || c.y < 0 || c.y > 4096) wrong++
        // Drawn in its cell's middle quarter (a cell is 256 tile units): neighbours' circles stay apart.
        if (c.count > 1 && (Math.abs((c.x % 256) - 128) > 32 || Math.abs((c.y % 256) - 128) > 32)) wrong++
      }
    }
    t.equal(total, cells.length, `zoom ${z}: ${total} points over ${byTile.size} tiles`)
    t.equal(wrong, 0, `zoom ${z}: every tile's cells exact`)
  }
  // The world tile: colours by majority (one in three of each colour, red first on the tie's order), the mean position.
  const world = grid.cells(0, 0, 0)
  const big = world.reduce((a, b) => (b.count > a.count ? b : a))
  t.ok(big.count > 1000)
  t.ok(['#ff0000ff', '#00ff00ff'].includes(big.color!), `the big cell's colour, ${big.color}`)
  // A filtered grid: the red points only.
  const red = grid.subset((item) => item % 3 === 0)
  t.equal(red.cells(0, 0, 0).reduce((n, c) => n + c.count, 0), items.filter((k) => k % 3 === 0).length)
  t.ok(red.cells(0, 0, 0).every((c) => c.color === '#ff0000ff'), 'every red cluster is red')
  // Split into three grids at random, merged: the same cells as the one grid, counts, centres and colours.
  const parts = [0, 1, 2].map((g) => grid.subset((item) => (item * 2654435761) % 3 === g))
  for (const [z, tx, ty] of [[0, 0, 0], [3, 1, 3], [10, 184, 401], [13, 1475, 3211]]) {
    t.same(PointGrid.merged(parts, z, tx, ty).map(({ count, x, y, color }) => ({ count, x, y, color })),
      grid.cells(z, tx, ty).map(({ count, x, y, color }) => ({ count, x, y, color })), `zoom ${z}: three grids merged are the one grid`)
  }
  t.same(PointGrid.merged([], 0, 0, 0), [], 'no grid, no cell')
  // Keys order cells along a Z curve: a tile's keys are one run.
  t.ok(mortonKey(0, 0) === 0 && mortonKey(1, 0) === 1 && mortonKey(0, 1) === 2 && mortonKey(2 ** 26 - 1, 2 ** 26 - 1) === 2 ** 52 - 1)
})

t.test('a line or polygon is smaller than a cell up to its level', async (t) => {
  // A cell of zoom z spans 2^(22 − z) cells of the finest grid.
  t.equal(shapeLevel(0), 22, 'one cell: small at every zoom')
  t.equal(shapeLevel(1), 21)
  t.equal(shapeLevel(2 ** 21 - 1), 1)
  t.equal(shapeLevel(2 ** 21), 0, 'half a world cell: small at zoom 0 only')
  t.equal(shapeLevel(2 ** 22 - 1), 0)
  t.ok(shapeLevel(2 ** 22) < 0, 'a cell of zoom 0 or more: at no zoom')
  for (let span = 1; span < 2 ** 26; span = span * 3 + 1) {
    const level = shapeLevel(span)
    if (level >= 0 && !(span < 2 ** (22 - level))) t.fail(`span ${span} not smaller than a cell at zoom ${level}`)
    if (level < 22 && span < 2 ** (22 - level - 1)) t.fail(`span ${span} smaller than a cell at zoom ${level + 1}`)
  }
  // A 0.005° square at 36° N: about 930 × 1,150 cells: small up to zoom 11.
  const zone = shapeOnGrid(-115.3, 36.1, -115.295, 36.105)
  t.equal(zone.level, 11)
  t.same(zone.cell, gridCell(-115.2975, 36.1025), 'counted at the centre of its bounds')
  t.same(shapeOnGrid(-10, 84, 10, 89), { cell: null, level: -1 }, 'a centre past 85.05°: drawn, never counted')
  // Reaching past 85.05°, its size is held within Web Mercator's latitudes.
  t.equal(shapeOnGrid(-0.001, 84, 0.001, 86).level, shapeLevel(gridCell(0, 84)![1] - gridCell(0, MAX_MERCATOR_LAT)![1]))
})

t.test('KML colours and resolved styles', async (t) => {
  t.equal(kmlColorToCss('ff2f2fd3'), '#d32f2fff', 'aabbggrr turned round')
  t.equal(kmlColorToCss('#80FF0000'), '#0000ff80')
  t.equal(kmlColorToCss('red'), null)
  t.equal(kmlColorToCss(undefined), null)
  const styles = new StyleResolver([
    { id: 'pin', kind: 'Style', definition: { 'IconStyle.color': 'ff0000ff', 'IconStyle.Icon.href': 'https://example.org/pin.png', 'LineStyle.color': 'ff00ff00', 'LineStyle.width': '2.5', 'PolyStyle.color': '7fff0000' } },
    { id: 'hot', kind: 'Style', definition: { 'IconStyle.color': 'ffffffff' } },
    { id: 'map', kind: 'StyleMap', definition: { 'Pair.normal': '#pin', 'Pair.highlight': '#hot' } },
    { id: 'inline', kind: 'StyleMap', definition: { 'Pair.highlight': '#hot', 'Pair.normal': '#pin', 'Pair.normal.IconStyle.color': 'ff00ffff' } },
    { id: 'nested', kind: 'StyleMap', definition: { 'Pair.normal': '#map' } },
    { id: 'loop', kind: 'StyleMap', definition: { 'Pair.normal': '#loop' } },
    { id: 'hollow', kind: 'Style', definition: { 'PolyStyle.color': '7fff0000', 'PolyStyle.fill': '0' } },
    { id: 'plain', kind: 'Style', definition: { 'LabelStyle.scale': '1' } }
  ])
  t.same(styles.resolve('pin', 'Point'), { color: '#ff0000ff', icon: 'https://example.org/pin.png' })
  t.same(styles.resolve('pin', 'LineString'), { color: '#00ff00ff', width: 2.5, icon: 'https://example.org/pin.png' })
  t.same(styles.resolve('pin', 'Polygon'), { color: '#00ff00ff', fill: '#0000ff7f', width: 2.5, icon: 'https://example.org/pin.png' })
  t.same(styles.resolve('map', 'Point'), styles.resolve('pin', 'Point'), 'a StyleMap: its normal pair')
  t.same(styles.resolve('inline', 'Point').color, '#ffff00ff', 'an inline leaf of the pair over the referenced style')
  t.same(styles.resolve('nested', 'Point'), styles.resolve('pin', 'Point'), 'a StyleMap of a StyleMap')
  t.same(styles.resolve('loop', 'Point'), {}, 'a loop resolves to nothing')
  t.same(styles.resolve('hollow', 'Polygon'), {}, 'no fill with <fill>0</fill>')
  t.same(styles.resolve('plain', 'Point'), {})
  t.same(styles.resolve('missing', 'Point'), {})
  t.same(styles.resolve(null, 'Point'), {})
})
