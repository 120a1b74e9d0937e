import type { FastifyServerOptions } from 'fastify'

const sensitiveParams = /([?&](?:code|state|token|access_token|refresh_token|refreshToken|client_secret|password)=)[^&#]*/gi

// Query strings can carry authorization codes and tokens; logs keep the parameter name only.
export function redactUrl(url: string): string {
  return url.replace(sensitiveParams, '$1[REDACTED]')
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]',
        'headers.authorization', 'headers.cookie',
        '*.accessToken', '*.refreshToken', '*.access_token', '*.refresh_token', '*.client_secret', '*.password', '*.secret',
        'accessToken', 'refreshToken', 'code'
      ],
      censor: '[REDACTED]'
    },
    serializers: {
      req(req: { method: string; url: string; hostname?: string; ip?: string; socket?: { remotePort?: number } }) {
        return { method: req.method, url: redactUrl(req.url), host: req.hostname, remoteAddress: req.ip }
      }
    }
  }
}
