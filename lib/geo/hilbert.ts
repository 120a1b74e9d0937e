/**
 * Position along a Hilbert curve over the lon/lat plane, 2^20 steps a side (about 0.00034° of
 * longitude by 0.00017° of latitude): points near each other mostly get keys near each other, so rows
 * written in key order put a small box's placemarks on few pages. Below 2^40, an exact double.
 */
const ORDER = 20
const SIDE = 2 ** ORDER

function cell (v: number, min: number, span: number): number {
  if (!Number.isFinite(v)) return 0
  return Math.min(SIDE - 1, Math.max(0, Math.floor(((v - min) / span) * SIDE)))
}

export function hilbertKey (lon: number, lat: number): number {
  let x = cell(lon, -180, 360)
  let y = cell(lat, -90, 180)
  let d = 0
  for (let s = SIDE / 2; s >= 1; s /= 2) {
    const rx = (x & s) > 0 ? 1 : 0
    const ry = (y & s) > 0 ? 1 : 0
    d += s * s * ((3 * rx) ^ ry)
    // Rotate the quadrant so that the curve's pieces join.
    if (ry === 0) {
      if (rx === 1) {
        x = SIDE - 1 - x
        y = SIDE - 1 - y
      }
      const t = x
      x = y
      y = t
    }
  }
  return d
}
