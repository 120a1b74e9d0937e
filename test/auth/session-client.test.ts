import t, { type Test } from 'tap'
import { createSigner } from 'fast-jwt'
import type { FastifyInstance } from 'fastify'
import { buildApp, openTestDatabase, testConfig } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { SessionClient, SessionEnded, type Tokens } from '../../examples/session-client.ts'

// The README's refresh-cycle client, against the real server over HTTP.
async function setup (t: Test) {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig({ REFRESH_REUSE_GRACE: '0' }, idp.env()), db: handle })
  const refreshes = countRefreshes(app)
  t.teardown(() => app.close())
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const signIn = async (): Promise<Tokens> => {
    const body = await (await fetch(`${base}/api/auth/identity?code=good`)).json() as Tokens
    return { accessToken: body.accessToken, refreshToken: body.refreshToken }
  }
  return { base, signIn, refreshes }
}

function countRefreshes (app: FastifyInstance): { count: number } {
  const seen = { count: 0 }
  app.addHook('onResponse', async (request) => { if (request.routeOptions.url === '/api/auth/refresh') seen.count++ })
  return seen
}

t.test('a fresh access token is used as it is; one close to expiry is renewed once for concurrent calls', async (t) => {
  const { base, signIn, refreshes } = await setup(t)
  const first = await signIn()
  const early = new SessionClient({ baseUrl: base, tokens: first })
  t.equal((await early.fetch('/api/auth/me')).status, 200)
  t.equal(refreshes.count, 0, 'no renewal while more than a minute is left')

  // The same tokens seen by a client that renews 15 minutes ahead: they are "about to expire".
  const saved: (Tokens | null)[] = []
  const client = new SessionClient({ baseUrl: base, tokens: first, renewAheadMs: 15 * 60_000, onTokens: (tokens) => saved.push(tokens) })
  const answers = await Promise.all(Array.from({ length: 8 }, () => client.fetch('/api/auth/me')))
  t.same(answers.map((r) => r.status), Array(8).fill(200))
  t.equal(refreshes.count, 1, 'eight concurrent calls close to expiry share one renewal')
  t.equal(saved.length, 1)
  t.not(saved[0]!.refreshToken, first.refreshToken, 'the rotated refresh token is handed to onTokens')

  const reused = await fetch(`${base}/api/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: first.refreshToken }) })
  t.equal(reused.status, 401, 'the first refresh token was spent')
})

t.test('a 401 is answered by one renewal and a retry', async (t) => {
  const { base, signIn, refreshes } = await setup(t)
  const tokens = await signIn()
  // An access token the server refuses (another secret), beside a good refresh token.
  const forged = createSigner({ key: 'x'.repeat(40), expiresIn: 900_000 })({ userId: 'someone' })
  const client = new SessionClient({ baseUrl: base, tokens: { ...tokens, accessToken: forged } })
  const res = await client.fetch('/api/auth/me')
  t.equal(res.status, 200)
  t.equal(refreshes.count, 1)
  t.not(client.tokens!.accessToken, forged)
})

t.test('when renewal fails the client discards both tokens and asks for a new sign-in', async (t) => {
  const { base, signIn } = await setup(t)
  const tokens = await signIn()
  const saved: (Tokens | null)[] = []
  const client = new SessionClient({ baseUrl: base, tokens, onTokens: (next) => saved.push(next) })
  // The session ends elsewhere (logout from another tab).
  t.equal((await fetch(`${base}/api/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${tokens.accessToken}` } })).status, 204)

  await t.rejects(client.fetch('/api/auth/me'), SessionEnded)
  t.equal(client.tokens, null)
  t.same(saved, [null], 'onTokens(null): the stored tokens can be dropped')
  await t.rejects(client.fetch('/api/auth/me'), { name: 'SessionEnded', message: 'signed out: sign in again' })
})
