import type { FastifyInstance, RouteOptions } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    // false: the route's answers do not depend on the dataset and the URL alone, or are not worth keeping.
    datasetCache?: boolean
  }
}

type QuerySchema = { type?: string; properties?: object; additionalProperties?: unknown } | undefined

/**
 * Every GET below /api/v1 reads only the imported dataset, so its answers are kept per URL until the
 * next import (see plugins/app/dataset-cache.ts), unless the route opts out. Unknown query parameters
 * are refused with 400: each would otherwise make a new URL, and a new cache entry, of the same answer.
 */
export default async function datasetPolicy(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.includes('GET') && !methods.includes('HEAD')) return
    const schema = (route.schema ??= {}) as { querystring?: QuerySchema }
    if (schema.querystring === undefined) schema.querystring = { type: 'object', properties: {}, additionalProperties: false }
    else if (schema.querystring.additionalProperties === undefined) schema.querystring = { ...schema.querystring, additionalProperties: false }
    if (route.config?.datasetCache !== false) app.datasetCache.cacheRoute(route)
  })
}
