import t from 'tap'
import { TokenService } from '../../lib/auth/tokens.ts'

const settings = { accessSecret: 'a'.repeat(48), refreshSecret: 'r'.repeat(48), issuer: 'test', accessExpiresIn: '15m', refreshExpiresIn: '7d' }
const claims = { userId: 'u1', providerId: 'p1', username: 'tester#0001', role: 'USER' as const, sid: 's1' }

t.test('verified access tokens are kept by signature, and only the very same token matches', async (t) => {
  const tokens = new TokenService(settings)
  const token = tokens.signAccess(claims)
  const first = tokens.verifyAccess(token)
  t.match(first, { ...claims, iss: 'test' })
  t.equal(tokens.verifyAccess(token), first, 'a repeat presentation is answered from the kept claims')

  // Another payload under the kept token's signature: found by the signature, refused by the comparison.
  const [header, , signature] = token.split('.')
  const payload = Buffer.from(JSON.stringify({ ...claims, userId: 'someone-else', iss: 'test', exp: Math.floor(Date.now() / 1000) + 600 })).toString('base64url')
  t.equal(tokens.verifyAccess(`${header}.${payload}.${signature}`), 'invalid')
  t.equal(tokens.verifyAccess(token), first, 'the kept token still verifies')
  t.equal(tokens.verifyAccess(`${token}x`), 'invalid', 'a changed signature is verified afresh, and refused')
})

t.test('a kept token that expires answers expired', async (t) => {
  const tokens = new TokenService({ ...settings, accessExpiresIn: '1s' })
  const token = tokens.signAccess(claims)
  t.match(tokens.verifyAccess(token), claims)
  await new Promise((r) => setTimeout(r, 1100))
  t.equal(tokens.verifyAccess(token), 'expired')
})
