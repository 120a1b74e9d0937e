import { BlockList, isIPv4 } from 'node:net'

// Loopback, private (RFC 1918, unique local fc00::/7) and link-local ranges: where a scraper on the
// same host or network comes from.
const privateRanges = new BlockList()
for (const [network, prefix] of [['127.0.0.0', 8], ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['169.254.0.0', 16]] as const) privateRanges.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) privateRanges.addSubnet(network, prefix, 'ipv6')

/** Whether an address (IPv4, IPv6, or IPv4 mapped into IPv6) is loopback, private or link-local. */
export function isPrivateAddress (address: string | undefined): boolean {
  if (!address) return false
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  const ip = mapped ? mapped[1]! : address
  try {
    return privateRanges.check(ip, isIPv4(ip) ? 'ipv4' : 'ipv6')
  } catch {
    return false
  }
}
