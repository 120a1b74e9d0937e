import { PbfWriter } from 'pbf'
import type { GeoJSONVTFeature } from '@maplibre/geojson-vt'

// One layer of a Mapbox Vector Tile 2.1 from geojson-vt's features, with pbf: the bytes vt-pbf's
// fromGeojsonVt writes for them, byte for byte (test/tiles/mvt.test.ts compares the two). Written here for
// the cost of a cold tile, where the encoding was the largest step: vt-pbf wraps every feature and
// every point in an object and finds each property value's index by a string made of its type and value
// (a number converted to text every time), so that a tile's ids and times cost a conversion, a string
// and a dictionary lookup each. Here values are found in maps by type, and geometries read in place.

type Value = string | number | boolean

interface Layer {
  name: string
  version: number
  extent: number
  features: GeoJSONVTFeature[]
  feature: GeoJSONVTFeature | null
  keys: string[]
  keyIndex: Map<string, number>
  values: Value[]
  strings: Map<string, number>
  numbers: Map<number, number>
  booleans: Map<boolean, number>
}

/** A tile of one layer, `name`, of the features (tile coordinates of `extent`), as Mapbox Vector Tile bytes. */
export function encodeTile (name: string, features: GeoJSONVTFeature[], options: { version: number; extent: number }): Uint8Array {
  const layer: Layer = {
    name,
    version: options.version,
    extent: options.extent,
    features,
    feature: null,
    keys: [],
    keyIndex: new Map(),
    values: [],
    strings: new Map(),
    numbers: new Map(),
    booleans: new Map()
  }
  const pbf = new PbfWriter()
  pbf.writeMessage(3, writeLayer, layer)
  return pbf.finish()
}

function writeLayer (layer: Layer, pbf: PbfWriter): void {
  pbf.writeVarintField(15, layer.version || 1)
  pbf.writeStringField(1, layer.name || '')
  pbf.writeVarintField(5, layer.extent || 4096)
  for (const feature of layer.features) {
    layer.feature = feature
    pbf.writeMessage(2, writeFeature, layer)
  }
  for (const key of layer.keys) pbf.writeStringField(3, key)
  for (const value of layer.values) pbf.writeMessage(4, writeValue, value)
}

// A feature's id as vt-pbf takes it: a number that is not NaN, or a string's leading integer.
function featureId (feature: GeoJSONVTFeature): number | undefined {
  const id = feature.id
  if (typeof id === 'string') return parseInt(id, 10)
  return typeof id === 'number' && !isNaN(id) ? id : undefined
}

function writeFeature (layer: Layer, pbf: PbfWriter): void {
  const feature = layer.feature!
  const id = featureId(feature)
  if (id !== undefined) pbf.writeVarintField(1, id)
  pbf.writeMessage(2, writeTags, layer)
  pbf.writeVarintField(3, feature.type)
  pbf.writeMessage(4, writeGeometry, feature)
}

// The index of a value in the layer's values, added when new: strings, numbers and booleans apart (1 and
// '1' are two values), any other value as its JSON text.
function valueIndex (layer: Layer, raw: unknown): number {
  if (typeof raw === 'number') return indexIn(layer, layer.numbers, raw)
  if (typeof raw === 'boolean') return indexIn(layer, layer.booleans, raw)
  return indexIn(layer, layer.strings, typeof raw === 'string' ? raw : JSON.stringify(raw))
}

function indexIn<T extends Value> (layer: Layer, index: Map<T, number>, value: T): number {
  let at = index.get(value)
  if (at === undefined) {
    at = layer.values.push(value) - 1
    index.set(value, at)
  }
  return at
}

function writeTags (layer: Layer, pbf: PbfWriter): void {
  const tags = layer.feature!.tags
  if (tags === null || tags === undefined) return
  for (const key in tags) {
    const value: unknown = tags[key]
    if (value === null || value === undefined) continue
    let keyAt = layer.keyIndex.get(key)
    if (keyAt === undefined) {
      keyAt = layer.keys.push(key) - 1
      layer.keyIndex.set(key, keyAt)
    }
    pbf.writeVarint(keyAt)
    pbf.writeVarint(valueIndex(layer, value))
  }
}

const command = (cmd: number, length: number) => (length << 3) + (cmd & 7)
const zigzag = (n: number) => (n << 1) ^ (n >> 31)

function writeGeometry (feature: GeoJSONVTFeature, pbf: PbfWriter): void {
  const type = feature.type
  const rings = feature.type === 1 ? [feature.geometry] : feature.geometry
  let x = 0
  let y = 0
  for (const ring of rings) {
    pbf.writeVarint(command(1, type === 1 ? ring.length : 1))
    const last = ring[ring.length - 1]
    // A polygon's ring is written without its closing point (ClosePath closes it).
    const count = type === 3 && ring.length > 1 && last[0] === ring[0][0] && last[1] === ring[0][1] ? ring.length - 1 : ring.length
    for (let i = 0; i < count; i++) {
      if (i === 1 && type !== 1) pbf.writeVarint(command(2, count - 1))
      const dx = ring[i][0] - x
      const dy = ring[i][1] - y
      pbf.writeVarint(zigzag(dx))
      pbf.writeVarint(zigzag(dy))
      x += dx
      y += dy
    }
    if (type === 3) pbf.writeVarint(command(7, 1))
  }
}

function writeValue (value: Value, pbf: PbfWriter): void {
  if (typeof value === 'string') pbf.writeStringField(1, value)
  else if (typeof value === 'boolean') pbf.writeBooleanField(7, value)
  else if (value % 1 !== 0) pbf.writeDoubleField(3, value)
  else if (value < 0) pbf.writeSVarintField(6, value)
  else pbf.writeVarintField(5, value)
}
