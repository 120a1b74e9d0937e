import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../schemas/common.ts'
import { StatsResponse } from '../../../schemas/placemarks.ts'
import { datasetStats } from '../../../db/placemarks.ts'

const stats: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/stats', {
    schema: {
      tags: ['Placemarks'],
      summary: 'Dataset statistics',
      description: '`top_folders` holds the 10 folder names with the most placemarks (a placemark counts for every level of its path), ties by name.',
      response: { 200: StatsResponse, ...errors(429, 503) }
    }
  }, async () => datasetStats(app.db))
}

export default stats
