import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../../../lib/typebox.ts'
import { answer, errors, fail } from '../../../schemas/common.ts'
import { datasetIcon, datasetIconList } from '../../../db/icons.ts'
import { HttpError } from '../../../lib/errors.ts'
import { isIconPath } from '../../../lib/kml/source.ts'

const IconParams = Type.Object({
  '*': Type.String({ maxLength: 255, description: 'The image\'s path in the KMZ, as the styles\' `href` names it', examples: ['images/icon-1.png'] })
})

const IconList = Type.Object({
  icons: Type.Array(Type.Object({
    name: Type.String({ description: 'The image\'s path in the KMZ: `GET /api/v1/icons/{name}` serves it', examples: ['images/icon-1.png'] }),
    contentType: Type.String({ description: 'Its media type', examples: ['image/png'] }),
    bytes: Type.Integer({ minimum: 0, description: 'Its size', examples: [1123] })
  }, { additionalProperties: false })),
  count: Type.Integer({ minimum: 0, description: 'How many', examples: [1] })
}, { title: 'IconList', additionalProperties: false, examples: [{ icons: [{ name: 'images/icon-1.png', contentType: 'image/png', bytes: 1123 }], count: 1 }] })

const icons: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/icons', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listIcons',
      summary: 'The images of the dataset\'s KMZ',
      description: 'Every image the imported KMZ held beside its KML, by path (byte order): what a style\'s relative `href` can name. ' +
        'Empty for a dataset imported from a KML. A client that draws icons asks only for these, so a style whose image the archive lacked costs no failed request. ' +
        'Cached per dataset version (ETag, 304).',
      response: { 200: answer(IconList, 'The images'), ...errors(429, 503) }
    }
  }, async () => {
    const list = await datasetIconList(app.db)
    return { icons: list, count: list.length }
  })

  app.get('/icons/*', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getIcon',
      summary: 'An image of the dataset\'s KMZ (its icons)',
      description: 'An image the imported KMZ held beside its KML (`images/icon-1.png`, the icons its styles point to), by its path in the archive: ' +
        'a style\'s relative `href` resolves against `/api/v1/icons/`. PNG, JPEG or GIF, with its media type. Cached per dataset version (ETag, 304). ' +
        'A path that is not plain and relative (`..`, a leading `/`, a backslash) is a 400; an image the dataset does not have, a 404.',
      params: IconParams,
      response: {
        200: {
          description: 'The image',
          content: { 'image/png': { schema: { type: 'string', format: 'binary' } }, 'image/jpeg': { schema: { type: 'string', format: 'binary' } }, 'image/gif': { schema: { type: 'string', format: 'binary' } } }
        },
        ...errors(
          fail(400, 'A path with an empty, `.` or `..` segment, a leading `/`, a backslash or a control character', 'params/* must be a relative path of the KMZ without . or .. segments'),
          fail(404, 'The dataset has no image of this path', 'Icon images/icon-99.png not found'),
          429, 503)
      }
    }
  }, async (request, reply) => {
    const name = request.params['*']
    if (!isIconPath(name)) throw new HttpError(400, 'params/* must be a relative path of the KMZ without . or .. segments')
    const icon = await datasetIcon(app.db, name)
    if (!icon) throw new HttpError(404, `Icon ${name} not found`)
    // Bytes with their content type: the answer cache keeps them as they are.
    reply.type(icon.contentType)
    return icon.data as never
  })
}

export default icons
