import { Negotiator } from '@fastify/accept-negotiator'
import { LRUCache } from 'lru-cache'
import type { StyleGeometry, StyleResolver } from '../kml/resolved-style.ts'

/**
 * RFC 7946 answers built as text around the stored geometries. A placemark's geometry is kept as GeoJSON
 * text written from the source's coordinates; it is spliced into the answer as it is, never parsed and
 * serialized again, so every digit of every coordinate is kept.
 */
export const GEOJSON_TYPE = 'application/geo+json'

// A client naming application/geo+json at least as high as application/json gets GeoJSON; any other
// Accept header (none, */*, application/json, text/html…) keeps the JSON answer.
const mediaTypes = new Negotiator({ supportedValues: [GEOJSON_TYPE, 'application/json'], cache: new LRUCache<string, string>({ max: 1000 }) })

/** Whether a request asks for GeoJSON: its `format` parameter (`geojson`), or else its Accept header. */
export function wantsGeoJson (format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'geojson'
  return accept !== undefined && mediaTypes.negotiate(accept) === GEOJSON_TYPE
}

/** A Feature: the placemark id, its stored geometry text, and the given properties. */
export function featureText (id: number, geometry: string, properties: object): string {
  return `{"type":"Feature","id":${id},"geometry":${geometry},"properties":${JSON.stringify(properties)}}`
}

/** A placemark (summary or detail) as a Feature: every field but the geometry becomes a property. */
export function placemarkFeature (placemark: { id: number; geometry: string }): string {
  const { geometry, ...properties } = placemark
  return featureText(placemark.id, geometry, properties)
}

/**
 * A placemark as a Feature with its resolved KML style as the `style` property (lib/kml/resolved-style.ts:
 * `color`, `fill`, `width`, `icon`, each absent when the style does not say), as the vector tiles carry it.
 */
export function styledPlacemarkFeature (styles: StyleResolver): (placemark: { id: number; geometry: string; style_id: string | null; geometry_type: StyleGeometry }) => string {
  return (placemark) => {
    const { geometry, ...properties } = placemark
    return featureText(placemark.id, geometry, { ...properties, style: styles.resolve(placemark.style_id, placemark.geometry_type) })
  }
}

/** A FeatureCollection of features already written, followed by the answer's own members (foreign members in RFC 7946 terms). */
export function collectionText (features: string[], members: Record<string, unknown> = {}): string {
  let tail = ''
  for (const [key, value] of Object.entries(members)) tail += `,${JSON.stringify(key)}:${JSON.stringify(value)}`
  return `{"type":"FeatureCollection","features":[${features.join(',')}]${tail}}`
}
