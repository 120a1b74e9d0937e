import fp from 'fastify-plugin'
import jwt, { type FastifyJWTOptions, type JWT } from '@fastify/jwt'
import type { FastifyInstance } from 'fastify'
import { randomSecret } from '../../lib/auth/tokens.ts'
import { generatePrivateKeyPem, headerKid, privateKeyRing, publicJwks, secretRing, type AccessAlgorithm, type KeyRing, type PublicJwk } from '../../lib/auth/key-ring.ts'
import { HttpError } from '../../lib/errors.ts'
import { requiredDurationMs } from '../../lib/duration.ts'
import { EXPIRED, INVALID, MISSING } from '../../lib/auth/bearer-messages.ts'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    namespaces: 'access' | 'refresh'
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    // Lifetimes of the two token kinds, in milliseconds.
    tokenLifetimes: { accessMs: number; refreshMs: number }
    // The key rings behind the two namespaces: verification by the token's `kid`, and the access ring's
    // public keys (null with HS256).
    signingKeys: {
      algorithm: AccessAlgorithm
      // The claims of a valid token, or a throw as app.jwt.<namespace>.verify does (an unknown `kid`: 401).
      verifyAccess: (token: string) => Record<string, unknown>
      verifyRefresh: (token: string) => Record<string, unknown>
      jwks: { keys: PublicJwk[] } | null
    }
  }
}

// The three 401 messages of the contract; whatever else fails verification is an invalid token.
const messages = {
  noAuthorizationInHeaderMessage: MISSING,
  badRequestErrorMessage: INVALID,
  authorizationTokenExpiredMessage: EXPIRED,
  authorizationTokenInvalid: INVALID,
  authorizationTokenUntrusted: INVALID,
  authorizationTokenUnsigned: INVALID
}

/** A ring from its settings, or a start-up error listing its problems (loadConfig has normally refused them already). */
function ring (built: { ring: KeyRing | null; problems: string[] }): KeyRing {
  if (built.ring) return built.ring
  throw new Error(built.problems.join('; '))
}

/**
 * Verification by key id. Each key of a ring has its @fastify/jwt verifier, built once at start: the
 * signing namespace's for the first key, a verify-only registration (`secret: { public }`) for each other
 * one. A token goes to the verifier its `kid` names, one without `kid` (signed before key ids existed) to
 * the signing key's; a `kid` outside the ring is refused without trying any key.
 */
function ringVerifier (verifiers: Map<string, JWT>, signing: JWT): (token: string) => Record<string, unknown> {
  return (token) => {
    const kid = headerKid(token)
    const verifier = kid === undefined ? signing : kid === null ? undefined : verifiers.get(kid)
    if (verifier === undefined) throw new HttpError(401, INVALID)
    return verifier.verify<Record<string, unknown>>(token)
  }
}

/**
 * Both token kinds through @fastify/jwt, each registration with its own namespace and key ring: `access`
 * (app.jwt.access; HS256, ES256 or EdDSA after JWT_ALGORITHM) and `refresh` (app.jwt.refresh; always
 * HS256). The first key of a ring signs, with its id in the `kid` header; every key of the ring verifies.
 * The algorithm is pinned, the issuer and the expiry are required and checked.
 */
export default fp(async function jwtPlugin (app: FastifyInstance) {
  const { config } = app
  const algorithm = config.JWT_ALGORITHM
  let accessSecret = config.JWT_SECRET
  let refreshSecret = config.JWT_REFRESH_SECRET
  let privateKeys = config.JWT_PRIVATE_KEYS
  const unset = [algorithm === 'HS256' ? ['JWT_SECRET', accessSecret] : ['JWT_PRIVATE_KEYS', privateKeys], ['JWT_REFRESH_SECRET', refreshSecret]].filter(([, v]) => !v).map(([name]) => name)
  if (unset.length) {
    // Only outside production (loadConfig refuses it there): tokens then die with the process.
    app.log.warn(`${unset.join(' / ')} not set: using random keys for this process only; tokens will not survive a restart`)
    accessSecret ??= randomSecret()
    refreshSecret ??= randomSecret()
    if (algorithm !== 'HS256') privateKeys ??= generatePrivateKeyPem(algorithm)
  }
  const accessRing = ring(algorithm === 'HS256' ? secretRing('JWT_SECRET', accessSecret!) : privateKeyRing('JWT_PRIVATE_KEYS', privateKeys!, algorithm))
  const refreshRing = ring(secretRing('JWT_REFRESH_SECRET', refreshSecret!))
  const accessMs = requiredDurationMs('JWT_ACCESS_EXPIRES_IN', config.JWT_ACCESS_EXPIRES_IN)
  const refreshMs = requiredDurationMs('JWT_REFRESH_EXPIRES_IN', config.JWT_REFRESH_EXPIRES_IN)
  // app.jwt exists once the first namespace is registered.
  const registered = (namespace: string): JWT => (app.jwt as unknown as Record<string, JWT>)[namespace]!
  // One token kind: the namespace that signs with the ring's first key (and verifies with it), then a
  // verify-only namespace for each further key (`accessKey2`, …), all with the same checks.
  const kind = async (namespace: 'access' | 'refresh', keyRing: KeyRing, expiresIn: number) => {
    const signing = keyRing.keys[0]
    // Tokens verified once are kept by the bearer check itself (plugins/app/auth.ts), keyed by the token;
    // refresh tokens are verified once each (they rotate): no verify cache either way.
    const verify = { algorithms: [keyRing.algorithm], allowedIss: config.JWT_ISSUER, requiredClaims: ['iss', 'exp'], cache: false }
    await app.register(jwt, {
      namespace,
      secret: keyRing.algorithm === 'HS256' ? signing.signing : { private: signing.signing, public: signing.verifying },
      // @fastify/jwt reads a numeric lifetime in seconds.
      sign: { algorithm: keyRing.algorithm, kid: signing.kid, iss: config.JWT_ISSUER, expiresIn: Math.round(expiresIn / 1000) },
      verify,
      messages
    } as FastifyJWTOptions)
    const verifiers = new Map([[signing.kid, registered(namespace)]])
    for (const [i, key] of keyRing.keys.entries()) {
      if (i === 0) continue
      const verifyOnly = `${namespace}Key${i + 1}`
      await app.register(jwt, { namespace: verifyOnly, secret: { public: key.verifying }, verify, messages } as FastifyJWTOptions)
      verifiers.set(key.kid, registered(verifyOnly))
    }
    return ringVerifier(verifiers, registered(namespace))
  }
  const verifyAccess = await kind('access', accessRing, accessMs)
  const verifyRefresh = await kind('refresh', refreshRing, refreshMs)
  app.decorate('tokenLifetimes', { accessMs, refreshMs })
  app.decorate('signingKeys', { algorithm, verifyAccess, verifyRefresh, jwks: publicJwks(accessRing) })
}, { name: 'jwt', dependencies: ['config'] })
