import type { ColumnType, Generated } from 'kysely'

export type GeometryType = 'Point' | 'LineString' | 'Polygon'
export interface KeyValue { key: string; value: string }

export interface PlacemarkTable {
  id: number
  name: string
  description: string | null
  style_id: string | null
  folder_path: string[]
  geometry_type: GeometryType
  geometry: string
  coordinates_raw: string | null
  media_links: string[]
  extended_data: ColumnType<KeyValue[], string, string>
  // Bounding box of the geometry in the core `box` type, GiST-indexed for bbox queries.
  bbox: string
  event_date: string | null
  event_timestamp: Date | null
  event_sort: Date | null
  created_at: ColumnType<Date, Date | string, never>
}

export interface StyleTable {
  id: string
  kind: 'Style' | 'StyleMap'
  definition: ColumnType<Record<string, string>, string, string>
}

export interface FolderTable {
  id: number
  name: string
  path: string[]
}

export interface DatasetTable {
  id: ColumnType<number, 1, never>
  version: ColumnType<string, number | string | bigint, number | string | bigint>
  source: string | null
  timezone: string
  imported_at: ColumnType<Date, Date | string, Date | string>
  summary: ColumnType<Record<string, unknown>, string, string>
}

export interface Database {
  placemarks: PlacemarkTable
  styles: StyleTable
  folders: FolderTable
  dataset: DatasetTable
}

export type { Generated }
