import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { answer, errors } from '../../../schemas/common.ts'
import { StatsResponse } from '../../../schemas/placemarks.ts'
import { datasetStats } from '../../../db/placemarks.ts'

const stats: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/stats', {
    config: { datasetCache: true },
    schema: {
      tags: ['Placemarks'],
      operationId: 'getStats',
      summary: 'Dataset statistics',
      description: 'Counts of placemarks and styles, placemarks per geometry type, and the largest folders. `top_folders` holds the 10 folder names with the most placemarks (a placemark counts for every level of its path), ties by name.',
      response: { 200: answer(StatsResponse, 'The dataset\'s statistics'), ...errors(429, 503) }
    }
  }, async () => datasetStats(app.db))
}

export default stats
