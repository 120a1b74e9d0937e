import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

export default fp(async function docs(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Guild analytics and placemark API',
        version: '1.0.0',
        description: [
          'One server, two APIs: session authentication with guild analytics (`/api/auth/*`, `/api/ghosts`)',
          'and a read-only placemark API (`/health`, `/api/v1/*`).',
          '',
          'Every error body is `{"error": <HTTP reason phrase>, "message": <text>}`.',
          'To call a protected route, sign in, then press **Authorize** and enter `Bearer <ACCESS_TOKEN>`.'
        ].join('\n')
      },
      tags: [
        { name: 'Auth', description: 'Sign-in through the identity provider, tokens and sessions' },
        { name: 'Analytics', description: 'Guild activity analytics' },
        { name: 'Placemarks', description: 'Read-only placemark dataset imported from KML/KMZ' },
        { name: 'Health', description: 'Liveness of the server and its database' }
      ],
      components: {
        securitySchemes: {
          // An apiKey header scheme so the Authorize dialog takes the whole value `Bearer <ACCESS_TOKEN>`.
          bearerAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Enter `Bearer <ACCESS_TOKEN>` (the accessToken from sign-in or refresh).'
          }
        }
      }
    }
  })
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    uiConfig: { persistAuthorization: true, displayRequestDuration: true, tryItOutEnabled: false },
    staticCSP: false
  })
}, { name: 'swagger' })
