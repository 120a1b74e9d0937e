import { Readable } from 'node:stream'
import type { Static } from '@sinclair/typebox'
import { Type } from '../../../lib/typebox.ts'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import yazl from 'yazl'
import { errors, fail, type Headers } from '../../../schemas/common.ts'
import { exportFolders, exportHeader, exportIcons, exportPlacemarks, exportStyles, type ExportFilter } from '../../../db/placemark-export.ts'
import { writeKml } from '../../../lib/kml/writer.ts'
import { HttpError } from '../../../lib/errors.ts'
import type { Box } from '../../../lib/geo/box.ts'
import { parseDatetime } from '../../ogc/index.ts'
import { DatetimeParam } from '../../../schemas/ogc.ts'

export const KML_TYPE = 'application/vnd.google-earth.kml+xml'
export const KMZ_TYPE = 'application/vnd.google-earth.kmz'

const ExportQuery = Type.Object({
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Words, each in the name or the description, any case (as on /api/v1/placemarks)', examples: ['tropicana'] })),
  folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Only placemarks with a folder of exactly this name at any level of their path (as on /api/v1/placemarks)', examples: ['Las Vegas Strip'] })),
  bbox: Type.Optional(Type.String({
    maxLength: 200,
    description: 'Only placemarks whose geometry intersects the box `minlon,minlat,maxlon,maxlat` (degrees, WGS 84), as /api/v1/spatial/bbox means it; minlon > maxlon crosses the antimeridian',
    examples: ['-115.18,36.09,-115.16,36.11']
  })),
  datetime: Type.Optional(DatetimeParam)
}, { additionalProperties: false })
type ExportQueryT = Static<typeof ExportQuery>

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/
const BBOX_FORM = 'querystring/bbox must be four numbers: minlon,minlat,maxlon,maxlat'

/** The `bbox` parameter as a box, or a 400 saying what is wrong with it. */
export function parseBbox (text: string): Box {
  const parts = text.split(',').map((s) => s.trim())
  if (parts.length !== 4 || !parts.every((p) => NUMBER.test(p))) throw new HttpError(400, BBOX_FORM)
  const [minLon, minLat, maxLon, maxLat] = parts.map(Number)
  if (![minLon, minLat, maxLon, maxLat].every(Number.isFinite)) throw new HttpError(400, BBOX_FORM)
  if (minLon < -180 || minLon > 180 || maxLon < -180 || maxLon > 180) throw new HttpError(400, 'querystring/bbox longitudes must be in [-180, 180]')
  if (minLat < -90 || minLat > 90 || maxLat < -90 || maxLat > 90) throw new HttpError(400, 'querystring/bbox latitudes must be in [-90, 90]')
  if (minLat > maxLat) throw new HttpError(400, 'querystring/bbox minlat must be <= maxlat')
  return { minLon, minLat, maxLon, maxLat }
}

const CACHE_CONTROL = 'public, max-age=0, must-revalidate'

const exportHeaders = (extension: string): Headers => ({
  'content-disposition': { type: 'string', description: `Always an attachment, named after the dataset version: \`attachment; filename="placemarks-<version>.${extension}"\``, example: `attachment; filename="placemarks-3.${extension}"` },
  etag: { type: 'string', description: 'Weak tag of the dataset version; send it back in `If-None-Match` to get 304 while the dataset is unchanged', example: 'W/"3"' },
  'cache-control': { type: 'string', description: 'Always `public, max-age=0, must-revalidate`', example: CACHE_CONTROL }
})

const badQuery = fail(400, 'A bbox that is not four numbers in range with minlat <= maxlat, an empty or over-long folder, or an unknown parameter',
  BBOX_FORM, 'querystring/bbox minlat must be <= maxlat', 'querystring/folder must NOT have fewer than 1 characters', "querystring: unknown parameter 'page'",
  'querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end')

function schema (extension: 'kml' | 'kmz', type: string, description: string) {
  return {
    tags: ['Placemarks'],
    operationId: extension === 'kml' ? 'exportKml' : 'exportKmz',
    summary: extension === 'kml' ? 'The dataset as KML' : 'The dataset as KMZ (zipped KML)',
    description,
    querystring: ExportQuery,
    response: {
      200: {
        description: extension === 'kml' ? 'The KML document, streamed' : 'A zip holding doc.kml, streamed',
        headers: exportHeaders(extension),
        content: { [type]: { schema: { type: 'string', format: 'binary' } } }
      },
      304: { description: 'Not modified: the `If-None-Match` tag is the current dataset version; no body', type: 'null' },
      ...errors(badQuery, 429, 503)
    }
  }
}

const COMMON = 'Every placemark in id order inside its folders (nested as imported), every shared Style and StyleMap as stored, ' +
  'each placemark\'s name, description, style, ExtendedData, media links (`gx_media_links`) and coordinates as read. ' +
  'Importing the export again gives the same placemarks field for field (ids restart at 1; `created_at` is the new import\'s). ' +
  '`folder`, `q`, `bbox` and `datetime` narrow it to the placemarks the list, the box query and the OGC items would give (and only the folders around them). ' +
  'Streamed as it is read, not cached; an import landing during a download cuts it off rather than mix two datasets.'

const KMZ_ICONS = 'Beside `doc.kml`, the images the imported KMZ held (its icons, `images/icon-1.png`), at the paths its styles point to.'

const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  async function start (query: ExportQueryT, request: FastifyRequest, reply: FastifyReply, extension: 'kml' | 'kmz'): Promise<Readable | null> {
    const { folder, bbox, q, datetime } = query
    const filter: ExportFilter = { folder, q, box: bbox === undefined ? undefined : parseBbox(bbox), datetime: datetime === undefined ? undefined : parseDatetime(datetime) }
    const { version, source, importedAt } = await exportHeader(app.db)
    const etag = `W/"${version}"`
    reply.header('etag', etag).header('cache-control', CACHE_CONTROL)
    const match = request.headers['if-none-match']
    if (match !== undefined && (match.trim() === '*' || match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag.slice(2)))) {
      reply.code(304)
      return null
    }
    reply.header('content-disposition', `attachment; filename="placemarks-${version}.${extension}"`)
    // Fastify would read a HEAD answer's stream to its end only to drop it.
    if (request.method === 'HEAD') return null
    const db = app.db
    // The KMZ carries the dataset's images at the paths its styles point to (read before the document streams).
    const icons = extension === 'kmz' ? await exportIcons(db, version) : []
    const chunks = writeKml({
      title: source ?? 'placemarks',
      styles: exportStyles(db, version),
      folders: exportFolders(db, version),
      placemarks: exportPlacemarks(db, version, filter),
      emptyFolders: folder === undefined && bbox === undefined && q === undefined && datetime === undefined
    })
    const kml = Readable.from((async function * () {
      for await (const chunk of chunks) yield Buffer.from(chunk)
    })(), { objectMode: false })
    kml.on('error', (err) => request.log.warn({ err }, 'export stopped'))
    if (extension === 'kml') return kml
    // doc.kml deflated as it streams (a data descriptor after it, its size being unknown up front).
    const zip = new yazl.ZipFile()
    zip.addReadStream(kml, 'doc.kml', { compress: true, mtime: importedAt ?? new Date(0) })
    // Images are compressed already.
    for (const icon of icons) zip.addBuffer(icon.data, icon.name, { compress: false, mtime: importedAt ?? new Date(0) })
    zip.end()
    const out = zip.outputStream as Readable
    // yazl pipes the KML without passing its errors on, and a closed answer stops the reading.
    kml.on('error', (err) => out.destroy(err))
    out.on('close', () => kml.destroy())
    return out
  }

  app.get('/export.kml', {
    schema: schema('kml', KML_TYPE, `The dataset as a KML document (\`${KML_TYPE}\`). ${COMMON}`)
  }, async (request, reply) => {
    const body = await start(request.query, request, reply, 'kml')
    if (reply.statusCode === 304) return reply.send()
    reply.type(KML_TYPE)
    return body === null ? reply.send() : reply.send(body as never)
  })

  app.get('/export.kmz', {
    schema: schema('kmz', KMZ_TYPE, `The dataset as KMZ (\`${KMZ_TYPE}\`): a zip holding \`doc.kml\`, deflated as it streams. ${KMZ_ICONS} ${COMMON}`)
  }, async (request, reply) => {
    const body = await start(request.query, request, reply, 'kmz')
    if (reply.statusCode === 304) return reply.send()
    reply.type(KMZ_TYPE)
    return body === null ? reply.send() : reply.send(body as never)
  })
}

export default exportRoutes
