import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import { sharedSchemas } from '../../schemas/components.ts'

export const API_TITLE = 'Guild analytics and placemark API'
// The page that signs in and shows the access token to paste into Authorize.
export const DEV_SIGNIN_PATH = '/auth/token'

interface Operation { parameters?: { required?: boolean; schema?: { default?: unknown } }[] }
interface Document { paths: Record<string, Record<string, Operation | undefined> | undefined> }

/**
 * A parameter with a default may be left out, whatever the server-side type says (the validator fills the
 * default in, so handlers always see it): the document marks it optional, so generated clients do too.
 */
function defaultsAreOptional<D extends Document> (document: D): D {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item ?? {})) {
      for (const parameter of operation?.parameters ?? []) {
        if (parameter.schema?.default !== undefined) parameter.required = false
      }
    }
  }
  return document
}

function introduction (devIdp: boolean): string {
  return [
    'One server, two APIs: session authentication with guild analytics (`/api/auth/*`, `/api/ghosts`)',
    'and a read-only placemark API (`/health`, `/api/v1/*`).',
    '',
    'Every error body is `{"error": <HTTP reason phrase>, "message": <text>}` (the `Error` schema). Every route but `/health*` is',
    'rate limited per client IP: each answer carries `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset`, and a',
    'refusal is 429 with `retry-after`. Answers under `/api/v1` (but the box query) carry an `ETag`: send it back in',
    '`If-None-Match` to get 304 while the dataset is unchanged. The placemark list, one placemark, the box query and the',
    'timeline also answer GeoJSON (`Accept: application/geo+json` or `format=geojson`).',
    '',
    '**[Map of the placemarks](/map):** the placemarks of the current view on a map, with popups, a folder filter and the timeline.',
    '',
    'To call a protected route, sign in, then press **Authorize** and enter `Bearer <ACCESS_TOKEN>`.',
    ...(devIdp
      ? ['', `**Development sign-in:** [${DEV_SIGNIN_PATH}](${DEV_SIGNIN_PATH}) signs in as a demo user through the development identity provider and shows the access token to paste here.`]
      : [])
  ].join('\n')
}

export default fp(async function docs (app: FastifyInstance) {
  // The shared shapes, before any route refers to them: they validate and serialize, and are the document's components.schemas.
  for (const schema of sharedSchemas) app.addSchema(schema)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: API_TITLE, version: '1.0.0', description: introduction(app.config.devIdp) },
      tags: [
        { name: 'Auth', description: 'Sign-in through the identity provider, tokens and sessions' },
        { name: 'Analytics', description: 'Guild activity analytics' },
        { name: 'Placemarks', description: 'Read-only placemark dataset imported from KML/KMZ' },
        { name: 'OGC API - Features', description: 'The placemarks for GIS clients (QGIS, GDAL): OGC API - Features Part 1, Core, GeoJSON and OpenAPI 3.0, under /ogc' },
        { name: 'Health', description: 'Liveness and readiness of the server and its database' }
      ],
      components: {
        securitySchemes: {
          // An apiKey header scheme so the Authorize dialog takes the whole value `Bearer <ACCESS_TOKEN>`.
          bearerAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Enter `Bearer <ACCESS_TOKEN>` (the accessToken from sign-in or refresh).'
          },
          // POST /api/activity only: a guild bot's key, made by `npm run apikey -- create`.
          apiKeyAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description: 'An API key made by `npm run apikey -- create --name N --guilds G1,G2` (POST /api/activity only).'
          }
        }
      }
    },
    // A shared schema is listed under its own $id (`#/components/schemas/Placemark`), not a generated name.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (document) => 'openapiObject' in document ? defaultsAreOptional(document.openapiObject as Document) as typeof document.openapiObject : document.swaggerObject
  })
  // The docs page's scripts (1.6 MB) go compressed to browsers that take it; in a scope of their own, so
  // that compression's hooks run on the docs' routes only, not on every API answer (the dataset answers
  // keep their own gzip bytes).
  await app.register(async function docsPage (docs) {
    await docs.register(compress, { global: true, encodings: ['br', 'gzip'], threshold: 1024 })
    await docs.register(swaggerUi, {
      routePrefix: '/api/docs',
      uiConfig: { persistAuthorization: true, displayRequestDuration: true, tryItOutEnabled: false },
      theme: { title: API_TITLE },
      staticCSP: false
    })
  })
}, { name: 'swagger' })
