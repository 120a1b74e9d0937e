import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '../lib/typebox.ts'
import { answer, errors, fail, type Headers } from '../schemas/common.ts'
import { HttpError } from '../lib/errors.ts'

const base64url = (description: string, example: string) => Type.String({ pattern: '^[A-Za-z0-9_-]+$', description, examples: [example] })

const Jwk = Type.Object({
  kty: Type.Union([Type.Literal('EC'), Type.Literal('OKP')], { description: 'Key type: `EC` for ES256 (P-256), `OKP` for EdDSA (Ed25519)' }),
  crv: Type.Union([Type.Literal('P-256'), Type.Literal('Ed25519')], { description: 'Curve' }),
  x: base64url('Public key: the x coordinate (EC) or the whole key (OKP), base64url', 'i1kjyfssWucFeqjF7Ou-TAlc4yflqLNaDHaxsotqoIE'),
  y: Type.Optional(base64url('EC only: the y coordinate, base64url', 'BXyXUFV0WR9Jhorr4EAc_dWyMxiNdHPyqyuw_1cZOA0')),
  kid: base64url('Key id, as in the `kid` header of the tokens this key signed (its RFC 7638 thumbprint, first 16 characters)', 'pIlLLMZiJbuGcgLm'),
  alg: Type.Union([Type.Literal('ES256'), Type.Literal('EdDSA')], { description: 'The algorithm of the tokens signed with this key' }),
  use: Type.Literal('sig', { description: 'Always `sig`: the key verifies signatures' })
}, { title: 'Jwk', additionalProperties: false, description: 'One public key of the access tokens\' key ring (RFC 7517)' })

const Jwks = Type.Object({
  keys: Type.Array(Jwk, { minItems: 1, description: 'Every key of the ring, the signing key first: a token verifies with the key whose `kid` it names' })
}, {
  title: 'Jwks',
  additionalProperties: false,
  examples: [{
    keys: [
      { kty: 'EC', crv: 'P-256', x: 'i1kjyfssWucFeqjF7Ou-TAlc4yflqLNaDHaxsotqoIE', y: 'BXyXUFV0WR9Jhorr4EAc_dWyMxiNdHPyqyuw_1cZOA0', kid: 'pIlLLMZiJbuGcgLm', alg: 'ES256', use: 'sig' }
    ]
  }]
})

// Long enough that a verifier does not ask on every token, short next to the access lifetime, so that a
// key introduced before its promotion is everywhere before it signs (docs/auth.md, "Signing keys and rotation").
export const JWKS_MAX_AGE_SECONDS = 300
const CACHE_CONTROL = `public, max-age=${JWKS_MAX_AGE_SECONDS}`
const cacheHeaders: Headers = {
  'cache-control': { type: 'string', description: 'How long the document may be kept: five minutes', example: CACHE_CONTROL }
}
const NO_KEYS = 'No public keys: access tokens are signed with HS256'

const jwks: FastifyPluginAsyncTypebox = async (app) => {
  const document = app.signingKeys.jwks
  app.get('/.well-known/jwks.json', {
    schema: {
      tags: ['Auth'],
      operationId: 'getJsonWebKeySet',
      summary: 'The public keys of the access tokens (JWKS)',
      description: 'With `JWT_ALGORITHM` `ES256` or `EdDSA`, the public keys of the access tokens\' key ring as an RFC 7517 ' +
        'JSON Web Key Set, so another service verifies access tokens (signature, `kid`, `alg`) without any secret. ' +
        'Refresh tokens are never verifiable with these keys. With `HS256` (a shared secret) there is nothing to publish: 404.',
      response: {
        200: answer(Jwks, 'The key set: every key of the ring, the signing key first', cacheHeaders),
        ...errors(fail(404, 'Access tokens are signed with HS256, a shared secret: no public key exists', NO_KEYS), 429)
      }
    }
  }, async (_request, reply) => {
    if (document === null) throw new HttpError(404, NO_KEYS)
    reply.header('cache-control', CACHE_CONTROL)
    return document
  })
}

export default jwks
