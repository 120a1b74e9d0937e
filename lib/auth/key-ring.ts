import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'

/** The algorithms access tokens may be signed with; refresh tokens are always HS256. */
export const ACCESS_ALGORITHMS = ['HS256', 'ES256', 'EdDSA'] as const
export type AccessAlgorithm = typeof ACCESS_ALGORITHMS[number]

export const MIN_SECRET_LENGTH = 32

/** A public key as RFC 7517 publishes it (EC P-256 or OKP Ed25519), with its key id and algorithm. */
export interface PublicJwk {
  kty: 'EC' | 'OKP'
  crv: 'P-256' | 'Ed25519'
  x: string
  y?: string
  kid: string
  alg: 'ES256' | 'EdDSA'
  use: 'sig'
}

/** One key of a ring: what signs with it, what verifies with it, and its id (the `kid` header). */
export interface RingKey {
  kid: string
  // The HS256 secret, or the private key as PKCS#8 PEM.
  signing: string
  // The HS256 secret, or the public key as SPKI PEM.
  verifying: string
  // Asymmetric keys only: the public key as published in the JWKS document.
  jwk?: PublicJwk
}

/** Keys of one token kind: the first signs, every one verifies. */
export interface KeyRing {
  algorithm: AccessAlgorithm
  keys: [RingKey, ...RingKey[]]
}

const KID_LENGTH = 16

/**
 * The key id of a secret: the first 16 base64url characters of its SHA-256. It names the key without
 * revealing it (a secret of 32+ characters cannot be recovered from 96 bits of its hash).
 */
export const secretKid = (secret: string): string => createHash('sha256').update(secret).digest('base64url').slice(0, KID_LENGTH)

/** The key id of a public key: its RFC 7638 JWK thumbprint (SHA-256), first 16 characters. */
function thumbprintKid (jwk: { kty?: string; crv?: string; x?: string; y?: string }): string {
  const members = jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x }
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url').slice(0, KID_LENGTH)
}

const ordinal = (index: number, count: number, what: string): string => (count > 1 ? ` (${what} ${index + 1} of ${count})` : '')

/** The secrets of an HS256 ring setting: separated by commas, spaces around each one ignored. */
export const splitSecrets = (value: string): string[] => value.split(',').map((s) => s.trim())

/** An HS256 ring from its setting, with every problem found (named by the setting and position, never showing a secret). */
export function secretRing (name: string, value: string): { ring: KeyRing | null; problems: string[] } {
  const secrets = splitSecrets(value)
  const problems: string[] = []
  secrets.forEach((secret, i) => {
    if (secret.length < MIN_SECRET_LENGTH) problems.push(`${name} must be at least ${MIN_SECRET_LENGTH} characters${ordinal(i, secrets.length, 'secret')}`)
    const first = secrets.indexOf(secret)
    if (first < i) problems.push(`${name}: secret ${i + 1} repeats secret ${first + 1}`)
  })
  if (problems.length) return { ring: null, problems }
  const keys = secrets.map((secret) => ({ kid: secretKid(secret), signing: secret, verifying: secret }))
  return { ring: { algorithm: 'HS256', keys: keys as KeyRing['keys'] }, problems }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g

/** PEM blocks of a text, in order; what lies between them must be blank or commas. */
function pemBlocks (text: string): { blocks: string[]; stray: boolean } {
  const blocks: string[] = []
  let stray = false
  let last = 0
  for (const match of text.matchAll(PEM_BLOCK)) {
    if (/[^\s,]/.test(text.slice(last, match.index))) stray = true
    last = match.index + match[0].length
    // `openssl ecparam -genkey` writes the curve's parameters before the key: not a key.
    if (match[1] !== 'EC PARAMETERS') blocks.push(match[0])
  }
  if (/[^\s,]/.test(text.slice(last))) stray = true
  return { blocks, stray }
}

const expected: Record<Exclude<AccessAlgorithm, 'HS256'>, { type: string; curve?: string; words: string }> = {
  ES256: { type: 'ec', curve: 'prime256v1', words: 'an EC P-256 (prime256v1) private key' },
  EdDSA: { type: 'ed25519', words: 'an Ed25519 private key' }
}

function describeKey (key: KeyObject): string {
  const curve = key.asymmetricKeyDetails?.namedCurve
  return `${key.asymmetricKeyType ?? 'unknown'}${curve ? ` ${curve}` : ''}`
}

/** One ring key of a parsed private key. */
function asymmetricKey (privateKey: KeyObject, algorithm: 'ES256' | 'EdDSA'): RingKey {
  const publicKey = createPublicKey(privateKey)
  const jwk = publicKey.export({ format: 'jwk' }) as { kty: 'EC' | 'OKP'; crv: 'P-256' | 'Ed25519'; x: string; y?: string }
  const kid = thumbprintKid(jwk)
  return {
    kid,
    signing: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    verifying: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    jwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, ...(jwk.y ? { y: jwk.y } : {}), kid, alg: algorithm, use: 'sig' }
  }
}

/**
 * An ES256 or EdDSA ring from `JWT_PRIVATE_KEYS`: PEM private keys one after another (newlines may be
 * written `\n`), or a comma list of PEM files. Problems name the setting and the key's position, a file
 * by its path, and never show key material.
 */
export function privateKeyRing (name: string, value: string, algorithm: 'ES256' | 'EdDSA'): { ring: KeyRing | null; problems: string[] } {
  const problems: string[] = []
  const texts: { text: string; where: string }[] = []
  if (value.includes('-----BEGIN')) {
    texts.push({ text: value.includes('\n') ? value : value.replace(/\\n/g, '\n'), where: name })
  } else {
    for (const path of value.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
      try {
        texts.push({ text: readFileSync(path, 'utf8'), where: `${name} file ${path}` })
      } catch (err) {
        problems.push(`${name}: cannot read the key file ${path} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`)
      }
    }
  }
  const pems: { pem: string; where: string }[] = []
  for (const { text, where } of texts) {
    const { blocks, stray } = pemBlocks(text)
    if (blocks.length === 0) problems.push(`${where} holds no PEM private key (-----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)`)
    else if (stray) problems.push(`${where} holds text that is not part of a PEM block`)
    for (const pem of blocks) pems.push({ pem, where })
  }
  const keys: RingKey[] = []
  const want = expected[algorithm]
  pems.forEach(({ pem, where }, i) => {
    const label = `${where}: key ${i + 1}${pems.length > 1 ? ` of ${pems.length}` : ''}`
    let key: KeyObject
    try {
      key = createPrivateKey(pem)
    } catch {
      problems.push(`${label} does not parse as an unencrypted PEM private key`)
      return
    }
    if (key.asymmetricKeyType !== want.type || (want.curve && key.asymmetricKeyDetails?.namedCurve !== want.curve)) {
      problems.push(`${label} is a ${describeKey(key)} key; JWT_ALGORITHM=${algorithm} needs ${want.words}`)
      return
    }
    const ringKey = asymmetricKey(key, algorithm)
    const first = keys.findIndex((k) => k.kid === ringKey.kid)
    if (first >= 0) problems.push(`${label} repeats key ${first + 1}`)
    else keys.push(ringKey)
  })
  if (problems.length || keys.length === 0) return { ring: null, problems }
  return { ring: { algorithm, keys: keys as KeyRing['keys'] }, problems }
}

/** A private key for this process only (development without JWT_PRIVATE_KEYS), as PKCS#8 PEM. */
export function generatePrivateKeyPem (algorithm: 'ES256' | 'EdDSA'): string {
  const { privateKey } = algorithm === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' }) : generateKeyPairSync('ed25519')
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
}

/** The JWKS document (RFC 7517) of an asymmetric ring: every key's public part, the signing key first. */
export function publicJwks (ring: KeyRing): { keys: PublicJwk[] } | null {
  if (ring.algorithm === 'HS256') return null
  return { keys: ring.keys.map((k) => k.jwk!) }
}

/**
 * The `kid` header of a JWT without verifying anything: undefined when the token has none (or its header
 * does not parse: the verifier then refuses it as malformed), null when it is not a string.
 */
export function headerKid (token: string): string | null | undefined {
  const dot = token.indexOf('.')
  if (dot <= 0) return undefined
  let header: unknown
  try {
    header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (header === null || typeof header !== 'object') return undefined
  const kid = (header as { kid?: unknown }).kid
  if (kid === undefined) return undefined
  return typeof kid === 'string' ? kid : null
}
