import t, { type Test } from 'tap'
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { calculateJwkThumbprint, createLocalJWKSet, createRemoteJWKSet, exportJWK, importPKCS8, jwtVerify, SignJWT, type JSONWebKeySet } from 'jose'
import type { FastifyInstance } from 'fastify'
import { ConfigError, loadConfig } from '../../lib/config.ts'
import { secretKid } from '../../lib/auth/key-ring.ts'
import { buildTestApp, openTestDatabase, productionSettings, testSecrets } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { spawnScript } from '../support/run.ts'

const ISSUER = 'guild-analytics'
const secret = () => randomBytes(32).toString('base64url')
const pem = (algorithm: 'ES256' | 'EdDSA' | 'P-384') => {
  const pair = algorithm === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: algorithm === 'ES256' ? 'prime256v1' : 'secp384r1' })
  return pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
}
const header = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString())
const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString())
// The start-up refusal of these settings ('' when they are accepted).
const configMessage = (env: Record<string, string>) => {
  try {
    loadConfig(env)
    return ''
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    return err.message
  }
}

interface Pair { accessToken: string; refreshToken: string }

async function signIn (app: FastifyInstance): Promise<Pair> {
  const res = await app.inject('/api/auth/identity?code=good')
  if (res.statusCode !== 200) throw new Error(`sign-in answered ${res.statusCode} ${res.body}`)
  return res.json()
}
const me = async (app: FastifyInstance, token: string) => {
  const res = await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${token}` } })
  return res.statusCode === 200 ? 200 : [res.statusCode, res.json().message]
}
const refresh = async (app: FastifyInstance, refreshToken: string) => {
  const res = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
  return { status: res.statusCode, body: res.json() }
}

t.test('key-ring settings: every problem named, no key material shown', async (t) => {
  const [a, b, c] = [secret(), secret(), secret()]
  t.match(configMessage({ JWT_SECRET: `${a},too-short` }), /JWT_SECRET must be at least 32 characters \(secret 2 of 2\)/)
  t.match(configMessage({ JWT_SECRET: `${a}, ${a}` }), /JWT_SECRET: secret 2 repeats secret 1/)
  t.equal(configMessage({ JWT_SECRET: `${a},${b}`, JWT_REFRESH_SECRET: `${c},${b}` }), 'JWT_SECRET and JWT_REFRESH_SECRET must be different', 'no secret in both rings')
  t.equal(configMessage({ JWT_SECRET: `${a},${b}`, JWT_REFRESH_SECRET: ` ${c} ` }), '', 'rings of several secrets, spaces ignored')
  t.match(configMessage({ JWT_ALGORITHM: 'RS256' }), /invalid configuration: JWT_ALGORITHM/)
  t.match(configMessage({ JWT_PRIVATE_KEYS: pem('ES256') }), /JWT_PRIVATE_KEYS is set but JWT_ALGORITHM is HS256/)

  const production = productionSettings
  const asymmetric = configMessage({ ...production, JWT_ALGORITHM: 'ES256' })
  t.match(asymmetric, /JWT_PRIVATE_KEYS is required in production with JWT_ALGORITHM=ES256/)
  t.match(asymmetric, /JWT_REFRESH_SECRET is required in production/, 'refresh tokens stay HS256')
  t.notMatch(asymmetric, /JWT_SECRET is required/, 'JWT_SECRET signs nothing with ES256')
  t.equal(configMessage({ ...production, JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEYS: pem('EdDSA'), JWT_REFRESH_SECRET: a }), '', 'EdDSA with its key and the refresh secret')
  t.equal(configMessage({ JWT_ALGORITHM: 'ES256' }), '', 'development runs without keys (a key for the process is generated)')

  const broken = '-----BEGIN PRIVATE KEY-----\nTUlJQnNlY3JldC1tYXRlcmlhbC1kby1ub3QtcHJpbnQ=\n-----END PRIVATE KEY-----\n'
  const unparsable = configMessage({ ...production, JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: pem('ES256') + broken, JWT_REFRESH_SECRET: a })
  t.equal(unparsable, 'JWT_PRIVATE_KEYS: key 2 of 2 does not parse as an unencrypted PEM private key')
  const wrongCurve = configMessage({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: pem('P-384') })
  t.equal(wrongCurve, 'JWT_PRIVATE_KEYS: key 1 is a ec secp384r1 key; JWT_ALGORITHM=ES256 needs an EC P-256 (prime256v1) private key')
  t.match(configMessage({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEYS: pem('ES256') }), /key 1 is a ec prime256v1 key; JWT_ALGORITHM=EdDSA needs an Ed25519 private key/)
  t.match(configMessage({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: 'not a key at all' }), /JWT_PRIVATE_KEYS: cannot read the key file not a key at all \(ENOENT\)/, 'no PEM: a list of files')
  t.match(configMessage({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: `-----BEGIN PRIVATE KEY-----${randomBytes(8).toString('hex')}` }), /JWT_PRIVATE_KEYS holds no PEM private key/)
  const key = pem('ES256')
  t.equal(configMessage({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: `${key}${key}` }), 'JWT_PRIVATE_KEYS: key 2 of 2 repeats key 1')
  t.equal(configMessage({ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: key.replace(/\n/g, '\\n') }), '', 'newlines written \\n, as one-line settings have them')

  // The server refuses to start with one line naming the setting, and no key material.
  const refused = await spawnScript('server.ts', [], { ...production, ...testSecrets, JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEYS: broken, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /JWT_PRIVATE_KEYS: key 1 does not parse as an unencrypted PEM private key/)
  t.notMatch(refused.stderr + refused.stdout, /TUlJQnNlY3JldC1tYXRlcmlhbC1kby1ub3QtcHJpbnQ|BEGIN/, 'the key is never printed')
})

/**
 * The runbook of docs/auth.md ("Signing keys and rotation"), step by step, each step a restart of the
 * server with the next setting on the same database: [A] → [A, B] (B verifies only) → [B, A] (B signs)
 * → [B] (A retired once its tokens expired). No one is signed out until A is retired; then its tokens are
 * refused. The refresh ring rotates alongside (JWT_REFRESH_SECRET, always HS256).
 */
async function rotation (t: Test, kind: 'postgres' | 'pglite', algorithm: 'HS256' | 'ES256' | 'EdDSA', ring: (keys: string[]) => Record<string, string>, keys: [string, string], kids: [string, string]) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, kind)
  const [refreshA, refreshB] = [secret(), secret()]
  const step = async (access: string[], refreshRing: string[]) => {
    const app = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000 }, { ...idp.env(), JWT_ALGORITHM: algorithm, ...ring(access), JWT_REFRESH_SECRET: refreshRing.join(',') })
    t.teardown(() => app.close())
    return app
  }
  const [A, B] = keys
  const [kidA, kidB] = kids

  const one = await step([A], [refreshA])
  const s1 = await signIn(one)
  t.match(header(s1.accessToken), { alg: algorithm, kid: kidA })
  t.match(header(s1.refreshToken), { alg: 'HS256', kid: secretKid(refreshA) })
  t.equal(await me(one, s1.accessToken), 200)
  const s1b = await signIn(one)
  await one.close()

  const two = await step([A, B], [refreshA, refreshB])
  t.equal(await me(two, s1.accessToken), 200, '[A, B]: the tokens of A work')
  const s2 = await signIn(two)
  t.equal(header(s2.accessToken).kid, kidA, '[A, B]: A still signs')
  t.equal(await me(two, s2.accessToken), 200)
  await two.close()

  const three = await step([B, A], [refreshB, refreshA])
  t.equal(await me(three, s1.accessToken), 200, '[B, A]: the tokens of A still work')
  t.equal(await me(three, s2.accessToken), 200)
  const s3 = await signIn(three)
  t.equal(header(s3.accessToken).kid, kidB, '[B, A]: B signs')
  t.equal(header(s3.refreshToken).kid, secretKid(refreshB))
  t.equal(await me(three, s3.accessToken), 200)
  const renewed = await refresh(three, s1.refreshToken)
  t.equal(renewed.status, 200, 'a refresh token of the old refresh secret renews')
  t.equal(header(renewed.body.accessToken).kid, kidB)
  t.equal(header(renewed.body.refreshToken).kid, secretKid(refreshB))
  await three.close()

  const four = await step([B], [refreshB])
  t.same(await me(four, s1.accessToken), [401, 'Invalid token'], '[B]: a token of the retired key is refused')
  t.same(await me(four, s2.accessToken), [401, 'Invalid token'])
  t.equal(await me(four, s3.accessToken), 200, '[B]: the tokens of B work')
  t.equal(await me(four, renewed.body.accessToken), 200)
  t.equal((await refresh(four, renewed.body.refreshToken)).status, 200)
  t.same(await refresh(four, s1b.refreshToken), { status: 401, body: { error: 'Unauthorized', message: 'Invalid refresh token' } }, 'a refresh token of a retired refresh secret is refused')
  return { handle, idp, s1, s3, four }
}

for (const kind of ['postgres', 'pglite'] as const) {
  t.test(`HS256 on ${kind}: add, promote and retire a secret with no one signed out`, async (t) => {
    const [A, B] = [secret(), secret()]
    const { handle, idp, s1, s3, four } = await rotation(t, kind, 'HS256', (keys) => ({ JWT_SECRET: keys.join(',') }), [A, B], [secretKid(A), secretKid(B)])
    t.not(header(s3.accessToken).kid, B.slice(0, 16), 'the key id is not the secret')

    // A token signed before key ids existed (no `kid`) verifies with the signing secret, so an upgrade signs no one out.
    const payload = claims(s3.accessToken)
    const legacy = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(B))
    t.equal(await me(four, legacy), 200, 'no kid: the signing secret')
    const sign = (key: string, protectedHeader: Record<string, unknown>) => new SignJWT(payload).setProtectedHeader({ alg: 'HS256', ...protectedHeader }).sign(new TextEncoder().encode(key))
    t.same(await me(four, await sign(B, { kid: 'unknown-key-id00' })), [401, 'Invalid token'], 'an unknown kid is refused')
    t.same(await me(four, await sign(A, { kid: secretKid(A) })), [401, 'Invalid token'], 'the retired secret')
    t.same(await me(four, await sign(A, { kid: secretKid(B) })), [401, 'Invalid token'], 'another secret under the kid of the ring')
    t.same(await me(four, await sign(B, { kid: 7 })), [401, 'Invalid token'], 'a kid that is not a string')
    t.same(await me(four, await new SignJWT(payload).setProtectedHeader({ alg: 'HS512', kid: secretKid(B) }).sign(new TextEncoder().encode(B))), [401, 'Invalid token'], 'HS512 is not HS256')
    t.same(await me(four, s1.accessToken.replace(/^[^.]+/, Buffer.from(JSON.stringify({ alg: 'none', kid: secretKid(B) })).toString('base64url'))), [401, 'Invalid token'], 'alg none')

    const jwks = await four.inject('/.well-known/jwks.json')
    t.same([jwks.statusCode, jwks.json()], [404, { error: 'Not Found', message: 'No public keys: access tokens are signed with HS256' }], 'HS256 publishes nothing')

    // An ES256 server in development without JWT_PRIVATE_KEYS signs with a key of its own process.
    const dev = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000 }, { ...idp.env(), JWT_ALGORITHM: 'ES256' })
    const token = (await signIn(dev)).accessToken
    t.equal(await me(dev, token), 200)
    t.equal((await dev.inject('/.well-known/jwks.json')).json().keys[0].kid, header(token).kid)
    t.same(await me(dev, s3.accessToken), [401, 'Invalid token'], 'an HS256 token on an ES256 server')
  })
}

// ES256 on PostgreSQL, EdDSA on the embedded database.
for (const [algorithm, kind] of [['ES256', 'postgres'], ['EdDSA', 'pglite']] as const) {
  t.test(`${algorithm} on ${kind}: add, promote and retire a key, and a separate verifier reads the JWKS`, async (t) => {
    const [A, B] = [pem(algorithm), pem(algorithm)]
    const dir = mkdtempSync(join(tmpdir(), 'key-rings-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'a.pem'), A, { mode: 0o600 })
    writeFileSync(join(dir, 'b.pem'), B, { mode: 0o600 })
    // ES256 keys as PEM text one after another, EdDSA keys as a comma list of files.
    const ring = (keys: string[]) => ({ JWT_PRIVATE_KEYS: algorithm === 'ES256' ? keys.join('') : keys.map((k) => join(dir, k === A ? 'a.pem' : 'b.pem')).join(', ') })
    // The key ids: RFC 7638 thumbprints (computed by jose here), first 16 characters.
    const kidOf = async (key: string) => (await calculateJwkThumbprint(await exportJWK(createPublicKey(key)))).slice(0, 16)
    const kids: [string, string] = [await kidOf(A), await kidOf(B)]
    const { handle, s1, s3, four } = await rotation(t, kind, algorithm, ring, [A, B], kids)

    const res = await four.inject('/.well-known/jwks.json')
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cache-control'], 'public, max-age=300')
    const jwks = res.json() as JSONWebKeySet
    t.same(jwks.keys.map((k) => k.kid), [kids[1]], 'the retired key is gone')
    for (const key of jwks.keys) {
      t.match(key, { kty: algorithm === 'ES256' ? 'EC' : 'OKP', crv: algorithm === 'ES256' ? 'P-256' : 'Ed25519', alg: algorithm, use: 'sig' })
      t.notOk('d' in key, 'no private part')
    }

    // A separate verifier (jose) with nothing but the key set.
    const verified = await jwtVerify(s3.accessToken, createLocalJWKSet(jwks), { issuer: ISSUER, algorithms: [algorithm] })
    t.equal(verified.payload.sid, claims(s3.accessToken).sid)
    t.equal(verified.protectedHeader.kid, kids[1])
    await t.rejects(jwtVerify(s1.accessToken, createLocalJWKSet(jwks), { issuer: ISSUER, algorithms: [algorithm] }), { code: 'ERR_JWKS_NO_MATCHING_KEY' }, 'nor does the verifier know the retired key')

    // Over real loopback, as another service would fetch it, while both keys are in the ring.
    const both = await buildTestApp(t, handle, { CHANGE_POLL_MS: 100000 }, { JWT_ALGORITHM: algorithm, ...ring([B, A]) })
    await both.listen({ port: 0, host: '127.0.0.1' })
    const remote = createRemoteJWKSet(new URL(`http://127.0.0.1:${(both.server.address() as AddressInfo).port}/.well-known/jwks.json`))
    for (const token of [s1.accessToken, s3.accessToken]) {
      t.equal((await jwtVerify(token, remote, { issuer: ISSUER, algorithms: [algorithm] })).payload.iss, ISSUER, `the key of ${header(token).kid} fetched`)
    }

    // Wrong algorithms and unknown keys are refused.
    const payload = claims(s3.accessToken)
    const publicPem = createPublicKey(B).export({ type: 'spki', format: 'pem' }) as string
    const confused = await new SignJWT(payload).setProtectedHeader({ alg: 'HS256', kid: kids[1] }).sign(new TextEncoder().encode(publicPem))
    t.same(await me(four, confused), [401, 'Invalid token'], 'HS256 with the public key as its secret')
    const other = pem(algorithm)
    const stranger = await new SignJWT(payload).setProtectedHeader({ alg: algorithm, kid: kids[1] }).sign(await importPKCS8(other, algorithm))
    t.same(await me(four, stranger), [401, 'Invalid token'], 'another key under the kid of the ring')
    const unknown = await new SignJWT(payload).setProtectedHeader({ alg: algorithm, kid: 'unknown-key-id00' }).sign(await importPKCS8(B, algorithm))
    t.same(await me(four, unknown), [401, 'Invalid token'], 'an unknown kid')
    const otherAlgorithm = algorithm === 'ES256' ? 'EdDSA' : 'ES256'
    const crossed = await new SignJWT(payload).setProtectedHeader({ alg: otherAlgorithm, kid: kids[1] }).sign(await importPKCS8(pem(otherAlgorithm), otherAlgorithm))
    t.same(await me(four, crossed), [401, 'Invalid token'], `${otherAlgorithm} on an ${algorithm} server`)
  })
}
