import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors } from '../../../schemas/common.ts'
import { FoldersResponse } from '../../../schemas/placemarks.ts'
import { folderNames } from '../../../db/placemarks.ts'

const folders: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/folders', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'listFolders',
      summary: 'Distinct folder names',
      description: 'Every distinct folder name of the dataset, at any nesting level, sorted by code point.',
      response: { 200: answer(FoldersResponse, 'Every distinct folder name, with their count'), ...errors(429, 503) }
    }
  }, async () => {
    const names = await folderNames(app.db)
    return { folders: names, count: names.length }
  })
}

export default folders
