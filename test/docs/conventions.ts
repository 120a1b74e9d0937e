import { STATUS_CODES } from 'node:http'

/**
 * What every documented route must carry in the OpenAPI document, checked against the routes the app
 * registered (test/docs/openapi.test.ts runs it on the real document and on a deliberately bad route):
 *
 * - the seed's path, without a trailing slash;
 * - a unique camelCase operationId, a summary, a description and a tag;
 * - every parameter described, with a range (numbers), a length, pattern, format or enum (strings), an
 *   example unless it is an enum or a `cursor` (only the server issues one: a written example would be
 *   refused), and not required when it has a default;
 * - every response described in words (never "Default Response"), with a schema for each content type
 *   (204, 3xx and 304 carry none), at least one success and one documented error;
 * - every error response with examples; an Error body's examples carry the status's reason phrase;
 * - 429 with the x-ratelimit-* headers and retry-after; a bearer route with 401;
 * - a cached route (every GET below /api/v1 but the box query) with the ETag on 200 and a 304.
 */
export interface RegisteredRoute { method: string; url: string; cached: boolean }

interface Media { schema?: { $ref?: string }; example?: unknown; examples?: Record<string, { value?: unknown }> }
interface Response { description?: string; content?: Record<string, Media>; headers?: Record<string, unknown> }
interface Parameter { name: string; in: string; description?: string; required?: boolean; example?: unknown; examples?: object; schema?: Record<string, unknown> }
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: object[]
  parameters?: Parameter[];
  responses?: Record<string, Response>
}
export interface OpenApiDocument { paths: Record<string, Record<string, Operation>> }

const BODILESS = new Set(['204', '301', '302', '303', '304', '307', '308'])
const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']

/** The document's path of a Fastify route URL: `:id` as `{id}`. */
export const documentPath = (url: string) => url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, '{*}')

function parameterProblems (p: Parameter): string[] {
  const problems: string[] = []
  const schema = p.schema ?? {}
  const label = `${p.in} parameter ${p.name}`
  if (!p.description) problems.push(`${label} has no description`)
  if (p.example === undefined && p.examples === undefined && schema.enum === undefined && p.name !== 'cursor') problems.push(`${label} has no example`)
  if (schema.default !== undefined && p.required) problems.push(`${label} has a default but is required`)
  const type = schema.type
  if ((type === 'integer' || type === 'number') && (schema.minimum === undefined || schema.maximum === undefined)) problems.push(`${label} has no range`)
  if (type === 'string' && ['maxLength', 'pattern', 'format', 'enum'].every((k) => schema[k] === undefined)) problems.push(`${label} has no length, pattern, format or enum`)
  return problems
}

function responseProblems (status: string, r: Response): string[] {
  const problems: string[] = []
  const label = `response ${status}`
  if (!r.description || r.description === 'Default Response') problems.push(`${label} is not described in words`)
  const content = Object.entries(r.content ?? {})
  if (BODILESS.has(status)) {
    if (content.length > 0) problems.push(`${label} documents a body`)
  } else if (content.length === 0) {
    problems.push(`${label} has no schema`)
  }
  for (const [type, media] of content) {
    if (!media.schema) problems.push(`${label} ${type} has no schema`)
  }
  if (/^[45]/.test(status)) {
    for (const [type, media] of content) {
      const examples = media.examples ? Object.values(media.examples).map((e) => e.value) : media.example === undefined ? [] : [media.example]
      if (examples.length === 0) problems.push(`${label} ${type} has no example`)
      if (media.schema?.$ref === '#/components/schemas/Error') {
        for (const example of examples) {
          if ((example as { error?: string }).error !== STATUS_CODES[Number(status)]) problems.push(`${label} has an example with another status's reason phrase`)
        }
      }
    }
  }
  if (status === '429') {
    for (const h of RATE_LIMIT_HEADERS) if (!r.headers?.[h]) problems.push(`${label} does not document the ${h} header`)
  }
  return problems
}

/** Every way the document falls short of the conventions, as `METHOD /path: problem` lines. */
export function conventionProblems (doc: OpenApiDocument, routes: RegisteredRoute[]): string[] {
  const problems: string[] = []
  const operationIds = new Map<string, string>()
  for (const route of routes) {
    const path = documentPath(route.url)
    const key = `${route.method} ${path}`
    const op = doc.paths[path]?.[route.method.toLowerCase()]
    if (!op) {
      problems.push(`${key}: not in the document${doc.paths[`${path}/`] ? ' (it is listed with a trailing slash)' : ''}`)
      continue
    }
    const add = (problem: string) => problems.push(`${key}: ${problem}`)
    if (path.length > 1 && path.endsWith('/')) add('the path ends with a slash')
    if (!op.operationId) add('no operationId')
    else if (!/^[a-z][a-zA-Z0-9]*$/.test(op.operationId)) add(`operationId ${op.operationId} is not camelCase`)
    else if (operationIds.has(op.operationId)) add(`operationId ${op.operationId} is also ${operationIds.get(op.operationId)}'s`)
    else operationIds.set(op.operationId, key)
    if (!op.summary) add('no summary')
    if (!op.description) add('no description')
    if (!op.tags?.length) add('no tag')
    for (const p of op.parameters ?? []) for (const problem of parameterProblems(p)) add(problem)
    const responses = op.responses ?? {}
    const statuses = Object.keys(responses)
    if (!statuses.some((s) => /^[23]/.test(s))) add('no success response')
    if (!statuses.some((s) => /^[45]/.test(s))) add('no documented error response')
    for (const [status, r] of Object.entries(responses)) for (const problem of responseProblems(status, r)) add(problem)
    if (op.security?.some((s) => 'bearerAuth' in s) && !responses['401']) add('a bearer route without 401')
    if (route.cached) {
      if (!responses['200']?.headers?.etag) add('a cached route whose 200 does not document its ETag')
      if (!responses['304']) add('a cached route without 304')
    }
  }
  return problems
}

/** Collects the routes the document must cover, as Fastify registers them (HEAD, hidden and docs routes aside). */
export function routeCollector (): { routes: RegisteredRoute[]; onRoute: (route: { method: string | string[]; url: string; schema?: unknown; config?: unknown }) => void } {
  const routes: RegisteredRoute[] = []
  return {
    routes,
    onRoute (route) {
      if ((route.schema as { hide?: boolean } | undefined)?.hide || route.url.startsWith('/api/docs')) return
      const config = route.config as { datasetCache?: boolean } | undefined
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue
        routes.push({ method, url: route.url, cached: method === 'GET' && config?.datasetCache === true })
      }
    }
  }
}
