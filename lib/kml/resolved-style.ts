/**
 * A placemark's KML style as a map draws it: the stored styles (flattened definitions, see
 * lib/kml/reader.ts) resolved through StyleMaps to their `normal` pair, colours turned from KML's
 * `aabbggrr` into CSS `#rrggbbaa`. The same attributes serve as vector tile properties and as the
 * `style` object of GeoJSON properties.
 */

/** The drawable part of a style; each member is absent when the style does not say. */
export interface ResolvedStyle {
  /** The icon colour (points) or the line colour (lines and polygon outlines), CSS `#rrggbbaa`. */
  color?: string
  /** The polygon fill colour, CSS `#rrggbbaa`. */
  fill?: string
  /** The line width in pixels. */
  width?: number
  /** The icon's href, when the style names one. */
  icon?: string
}

export type StyleGeometry = 'Point' | 'LineString' | 'Polygon'

/** A stored style: its id, kind and flattened definition (`IconStyle.color`, `Pair.normal`, `Pair.normal.LineStyle.width`…). */
export interface StoredStyle { id: string; kind: 'Style' | 'StyleMap'; definition: Record<string, string> }

/** KML's `aabbggrr` (hex, optionally with a leading `#`) as CSS `#rrggbbaa`; null when it is not 8 hex digits. */
export function kmlColorToCss (kml: string | undefined): string | null {
  if (kml === undefined) return null
  const hex = kml.trim().replace(/^#/, '').toLowerCase()
  if (!/^[0-9a-f]{8}$/.test(hex)) return null
  return `#${hex.slice(6, 8)}${hex.slice(4, 6)}${hex.slice(2, 4)}${hex.slice(0, 2)}`
}

// A StyleMap pointing at a StyleMap pointing at… is followed this deep, no further (a loop ends there too).
const MAX_DEPTH = 4

/** The leaves of a plain style's definition (`IconStyle.color` → value), a StyleMap's resolved through its `normal` pair. */
function leaves (id: string, styles: Map<string, StoredStyle>, depth = 0): Record<string, string> {
  const style = styles.get(id)
  if (style === undefined || depth > MAX_DEPTH) return {}
  if (style.kind === 'Style') return style.definition
  // The normal pair: the one keyed `normal`, else the first one.
  const keys = Object.keys(style.definition)
  const pairKey = keys.some((k) => k === 'Pair.normal' || k.startsWith('Pair.normal.')) ? 'normal' : keys.find((k) => k.startsWith('Pair.'))?.split('.')[1]
  if (pairKey === undefined) return {}
  const prefix = `Pair.${pairKey}.`
  const url = style.definition[`Pair.${pairKey}`]
  const referenced = url !== undefined ? leaves(localStyleId(url), styles, depth + 1) : {}
  const inline: Record<string, string> = {}
  for (const [k, v] of Object.entries(style.definition)) if (k.startsWith(prefix)) inline[k.slice(prefix.length)] = v
  return { ...referenced, ...inline }
}

// `#id` → `id`; a URL to another document keeps its text (and resolves to nothing).
const localStyleId = (url: string) => (url.trim().charCodeAt(0) === 0x23 ? url.trim().slice(1) : url.trim())

function resolvedFor (l: Record<string, string>, geometry: StyleGeometry): ResolvedStyle {
  const out: ResolvedStyle = {}
  const color = kmlColorToCss(geometry === 'Point' ? l['IconStyle.color'] : l['LineStyle.color'])
  if (color !== null) out.color = color
  if (geometry === 'Polygon' && l['PolyStyle.fill'] !== '0') {
    const fill = kmlColorToCss(l['PolyStyle.color'])
    if (fill !== null) out.fill = fill
  }
  if (geometry !== 'Point' && l['LineStyle.width'] !== undefined) {
    const width = Number(l['LineStyle.width'])
    if (Number.isFinite(width) && width >= 0) out.width = width
  }
  const href = l['IconStyle.Icon.href']?.trim()
  if (href) out.icon = href
  return out
}

/** Resolved styles by style id and geometry type, from the stored styles. */
export class StyleResolver {
  private readonly byId = new Map<string, Record<StyleGeometry, ResolvedStyle>>()

  constructor (styles: StoredStyle[]) {
    const all = new Map(styles.map((s) => [s.id, s]))
    for (const s of styles) {
      const l = leaves(s.id, all)
      this.byId.set(s.id, { Point: resolvedFor(l, 'Point'), LineString: resolvedFor(l, 'LineString'), Polygon: resolvedFor(l, 'Polygon') })
    }
  }

  /** A placemark's resolved style: empty without a style id or when the id names no stored style. */
  resolve (styleId: string | null | undefined, geometry: StyleGeometry): ResolvedStyle {
    if (styleId === null || styleId === undefined) return EMPTY
    return this.byId.get(styleId)?.[geometry] ?? EMPTY
  }
}

const EMPTY: ResolvedStyle = Object.freeze({})
