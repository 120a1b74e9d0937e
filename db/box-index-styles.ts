import type { Kysely } from 'kysely'
import { sql } from './kysely.ts'
import type { Database } from './types.ts'
import { StyleResolver, type StoredStyle } from '../lib/kml/resolved-style.ts'

/** The stored styles' query: their rows are what styleResolverOf takes. */
export const STYLES_QUERY = 'SELECT id, kind, definition FROM styles'

/** Rows of STYLES_QUERY, resolved (lib/kml/resolved-style.ts): the definition may come as JSON text or parsed, as the driver gives it. */
export function styleResolverOf (rows: (Omit<StoredStyle, 'definition'> & { definition: string | Record<string, string> })[]): StyleResolver {
  return new StyleResolver(rows.map((r) => ({ id: r.id, kind: r.kind, definition: typeof r.definition === 'string' ? JSON.parse(r.definition) as Record<string, string> : r.definition })))
}

/** The stored styles of the dataset, resolved (lib/kml/resolved-style.ts). */
export async function loadStyleResolver (db: Kysely<Database>): Promise<StyleResolver> {
  const { rows } = await sql.raw<StoredStyle>(STYLES_QUERY).execute(db)
  return styleResolverOf(rows)
}

const STYLE_KEY = ',"style_id":'
const FOLDER_KEY = ',"folder_path":'
const POINT_TYPE = ',"geometry_type":"Point"'

/** A serialized summary's style id and whether it is a Point, read without parsing the whole summary. */
export function summaryStyle (json: string): { styleId: string | null; point: boolean } {
  const at = json.indexOf(STYLE_KEY)
  const end = at === -1 ? -1 : json.indexOf(FOLDER_KEY, at)
  const styleId = end === -1 || json.charCodeAt(at + STYLE_KEY.length) !== 0x22 ? null : JSON.parse(json.slice(at + STYLE_KEY.length, end)) as string
  return { styleId, point: json.includes(POINT_TYPE, end === -1 ? 0 : end) }
}
