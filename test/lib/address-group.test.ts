import t from 'tap'
import { addressGroup, clientKey } from '../../lib/address-group.ts'

// Each address and its group: the keys @fastify/rate-limit's default key generator gives the same addresses.
const groups: [string, string][] = [
  ['127.0.0.1', '127.0.0.1'],
  ['10.0.0.1', '10.0.0.1'],
  ['::1', '::'],
  ['::', '::'],
  ['2001:db8:85a3::8a2e:370:7334', '2001:db8:85a3::'],
  ['2001:0DB8:0001:0002:aaaa::1', '2001:db8:1:2::'],
  ['2001:db8:1:2::1', '2001:db8:1:2::'],
  ['1:2:3:4:5:6:7:8', '1:2:3:4::'],
  ['2001:db8:0:0:1::', '2001:db8::'],
  ['fe80::1%eth0', 'fe80::'],
  ['fd00::7', 'fd00::'],
  ['::ffff:10.1.2.3', '10.1.2.3'],
  ['::ffff:a01:203', '10.1.2.3'],
  ['64:ff9b::10.1.2.3', '64:ff9b::'],
  ['not an address', 'not an address']
]

t.test('an IPv4 address is its own group, an IPv6 address its /64, a mapped IPv4 address its IPv4', async (t) => {
  for (const [address, group] of groups) t.equal(addressGroup(address), group, address)
})

t.test('clientKey gives addressGroup\'s groups, remembered or not', async (t) => {
  const key = clientKey(3)
  // Three rounds over more addresses than it remembers: every answer is worked out again or remembered.
  for (let round = 0; round < 3; round++) {
    for (const [address, group] of groups) t.equal(key(address), group, `${address}, round ${round + 1}`)
  }
  t.equal(key(undefined), '', 'a request without an address (its socket gone) has the empty key')
})
