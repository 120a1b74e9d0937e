/**
 * What a dataset is as a whole, counted by the import as it reads the placemarks: the placemarks per
 * geometry type, the ten folder names holding the most, the extent of their bounds and of their KML
 * times. A dataset version never changes once imported, so these are its facts for as long as it is
 * served (db/dataset-facts.ts stores them with it). Counted from the table on every ask, they cost full
 * scans: at 10M placemarks 24 s for the folders (past the statement timeout: `/api/v1/stats` answered
 * 503) and 5 s for the extent.
 */
import type { Box } from '../geo/box.ts'
import { compareBytes } from '../activity/analytics.ts'

export interface DatasetFactsT {
  /** Placemarks per geometry type (those with none absent), by type name. Pairs: a JSON object stored as jsonb loses its order. */
  geometry_types: [string, number][]
  /** The 10 folder names with the most placemarks (a placemark counts once for each name of its path), most first, ties by name in code point order. */
  top_folders: [string, number][]
  /** West, south, east, north of every placemark's bounds; null without a placemark. */
  extent: [number, number, number, number] | null
  /** The earliest begin and latest end of the placemarks' KML times (ISO instants, null at an end some timed placemark leaves open); null when none has a time. */
  time_extent: [string | null, string | null] | null
}

export const TOP_FOLDERS = 10

export class DatasetFacts {
  private readonly types = new Map<string, number>()
  // Placemarks by folder path (a path's names joined by NUL, which no XML text holds): as many as the folders.
  private readonly paths = new Map<string, { path: string[]; n: number }>()
  private minLon = Infinity
  private minLat = Infinity
  private maxLon = -Infinity
  private maxLat = -Infinity
  private timed = false
  private openBegin = false
  private openEnd = false
  private begin: { ms: number; iso: string } | null = null
  private end: { ms: number; iso: string } | null = null

  /** One placemark as the import writes it: its geometry's type and bounds, its folder path, its KML time's ISO instants. */
  add (type: string, b: Box, folderPath: string[], begin: string | null, end: string | null): void {
    this.types.set(type, (this.types.get(type) ?? 0) + 1)
    const key = folderPath.join('\0')
    const entry = this.paths.get(key)
    if (entry === undefined) this.paths.set(key, { path: folderPath, n: 1 })
    else entry.n++
    if (b.minLon < this.minLon) this.minLon = b.minLon
    if (b.minLat < this.minLat) this.minLat = b.minLat
    if (b.maxLon > this.maxLon) this.maxLon = b.maxLon
    if (b.maxLat > this.maxLat) this.maxLat = b.maxLat
    if (begin === null && end === null) return
    this.timed = true
    if (begin === null) this.openBegin = true
    else {
      const ms = Date.parse(begin)
      if (this.begin === null || ms < this.begin.ms) this.begin = { ms, iso: begin }
    }
    if (end === null) this.openEnd = true
    else {
      const ms = Date.parse(end)
      if (this.end === null || ms > this.end.ms) this.end = { ms, iso: end }
    }
  }

  result (): DatasetFactsT {
    const byName = new Map<string, number>()
    for (const { path, n } of this.paths.values()) {
      for (const name of new Set(path)) byName.set(name, (byName.get(name) ?? 0) + n)
    }
    const top = [...byName].sort((a, b) => b[1] - a[1] || compareBytes(a[0], b[0])).slice(0, TOP_FOLDERS)
    return {
      geometry_types: [...this.types].sort((a, b) => compareBytes(a[0], b[0])),
      top_folders: top,
      extent: this.minLon <= this.maxLon ? [this.minLon, this.minLat, this.maxLon, this.maxLat] : null,
      time_extent: this.timed ? [this.openBegin ? null : this.begin!.iso, this.openEnd ? null : this.end!.iso] : null
    }
  }
}
