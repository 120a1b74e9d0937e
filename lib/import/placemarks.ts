import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/types.ts'
import { readKml, type KmlPlacemark } from '../kml/reader.ts'
import { parseNameDate } from '../timeline/name-date.ts'
import { boundsOf } from '../geo/box.ts'

export interface ImportOptions {
  timeZone: string
  source: string
  dryRun?: boolean
  batchSize?: number
  onProgress?: (placemarks: number) => void
}

export interface ImportSummary {
  source: string
  timeZone: string
  dryRun: boolean
  placemarks: number
  geometryTypes: Record<string, number>
  styles: number
  styleKinds: { Style: number; StyleMap: number }
  folders: number
  skipped: Record<string, number>
  timelineEvents: number
  timestampedEvents: number
  version: number | null
  seconds: number
}

interface PlacemarkRow {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string[]
  geometry_type: string
  geometry: string
  coordinates_raw: string
  media_links: string[]
  extended_data: { key: string; value: string }[]
  bbox: string
  event_date: string | null
  event_timestamp: string | null
  event_sort: string | null
  created_at: string
}

function toRow(id: number, p: KmlPlacemark, timeZone: string, createdAt: string): PlacemarkRow {
  const b = boundsOf(p.geometry)
  const when = parseNameDate(p.name, timeZone)
  return {
    id,
    name: p.name,
    description: p.description,
    style_id: p.styleId,
    folder_path: p.folderPath,
    geometry_type: p.geometry.type,
    geometry: JSON.stringify(p.geometry),
    coordinates_raw: p.coordinatesRaw,
    media_links: p.mediaLinks,
    extended_data: p.extendedData,
    bbox: `(${b.maxLon},${b.maxLat}),(${b.minLon},${b.minLat})`,
    event_date: when?.date ?? null,
    event_timestamp: when?.timestamp ?? null,
    event_sort: when?.sortKey ?? null,
    created_at: createdAt
  }
}

// One JSON parameter per batch: json_populate_recordset maps it onto the table's row type, arrays included.
async function insertPlacemarks(db: Kysely<Database>, rows: PlacemarkRow[]): Promise<void> {
  if (!rows.length) return
  await sql`INSERT INTO placemarks SELECT * FROM json_populate_recordset(NULL::placemarks, ${JSON.stringify(rows)}::json)`.execute(db)
}

/**
 * Reads a KML stream and, unless dryRun, replaces the served dataset with it in one transaction:
 * readers see the old dataset until the commit, and any failure leaves the old dataset in place.
 */
export async function importPlacemarks(db: Kysely<Database> | null, chunks: AsyncIterable<string | Buffer>, options: ImportOptions): Promise<ImportSummary> {
  const started = performance.now()
  const createdAt = new Date().toISOString()
  const batchSize = options.batchSize ?? 2000
  const summary: ImportSummary = {
    source: options.source,
    timeZone: options.timeZone,
    dryRun: Boolean(options.dryRun),
    placemarks: 0,
    geometryTypes: { Point: 0, LineString: 0, Polygon: 0 },
    styles: 0,
    styleKinds: { Style: 0, StyleMap: 0 },
    folders: 0,
    skipped: {},
    timelineEvents: 0,
    timestampedEvents: 0,
    version: null,
    seconds: 0
  }

  const run = async (trx: Kysely<Database> | null) => {
    if (trx) {
      await sql`DELETE FROM placemarks`.execute(trx)
      await sql`DELETE FROM styles`.execute(trx)
      await sql`DELETE FROM folders`.execute(trx)
    }
    let batch: PlacemarkRow[] = []
    const styleIds = new Set<string>()
    for await (const item of readKml(chunks)) {
      if (item.kind === 'placemark') {
        const row = toRow(summary.placemarks + 1, item.placemark, options.timeZone, createdAt)
        summary.placemarks++
        summary.geometryTypes[row.geometry_type] = (summary.geometryTypes[row.geometry_type] ?? 0) + 1
        if (row.event_sort) summary.timelineEvents++
        if (row.event_timestamp) summary.timestampedEvents++
        batch.push(row)
        if (batch.length >= batchSize) {
          if (trx) await insertPlacemarks(trx, batch)
          batch = []
          options.onProgress?.(summary.placemarks)
        }
      } else if (item.kind === 'style') {
        const { style } = item
        if (styleIds.has(style.id)) {
          summary.skipped[`duplicate style id`] = (summary.skipped['duplicate style id'] ?? 0) + 1
          continue
        }
        styleIds.add(style.id)
        summary.styles++
        summary.styleKinds[style.kind]++
        if (trx) {
          await trx.insertInto('styles').values({ id: style.id, kind: style.kind, definition: JSON.stringify(style.definition) }).execute()
        }
      } else if (item.kind === 'folder') {
        summary.folders++
        if (trx) await trx.insertInto('folders').values({ id: summary.folders, name: item.folder.name, path: item.folder.path }).execute()
      } else {
        summary.skipped[item.reason] = (summary.skipped[item.reason] ?? 0) + 1
      }
    }
    if (trx) {
      await insertPlacemarks(trx, batch)
      const { rows } = await sql<{ version: number }>`
        INSERT INTO dataset (id, version, source, timezone, imported_at, summary)
        VALUES (1, 1, ${options.source}, ${options.timeZone}, now(), ${JSON.stringify({ placemarks: summary.placemarks })})
        ON CONFLICT (id) DO UPDATE SET version = dataset.version + 1, source = EXCLUDED.source,
          timezone = EXCLUDED.timezone, imported_at = EXCLUDED.imported_at, summary = EXCLUDED.summary
        RETURNING version`.execute(trx)
      summary.version = Number(rows[0].version)
    }
    options.onProgress?.(summary.placemarks)
  }

  if (db && !options.dryRun) await db.transaction().execute(run)
  else await run(null)
  summary.seconds = (performance.now() - started) / 1000
  return summary
}
