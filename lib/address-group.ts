import { isIPv4, isIPv6 } from 'node:net'

/**
 * The client an address stands for, as the rate limiter counts it (@fastify/rate-limit's default key):
 * an IPv4 address itself (also when mapped into IPv6, ::ffff:a.b.c.d), an IPv6 address by its /64 (one
 * subscriber's network: rotating addresses inside it is free), written in its compressed form with the
 * zone dropped, e.g. 2001:db8:1:2:: for 2001:0db8:0001:0002:aaaa::1%eth0. Anything else is its own key.
 */
export function addressGroup (ip: string): string {
  if (isIPv4(ip)) return ip
  const zone = ip.indexOf('%')
  const address = zone === -1 ? ip : ip.slice(0, zone)
  if (!isIPv6(address)) return ip
  const groups = expand(canonical(address))
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`
  }
  return canonical(`${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::`)
}

// RFC 5952's form (lower case, no leading zeros, the longest zero run as ::, a dotted tail in hex), as
// the URL parser writes a host.
const canonical = (address: string) => new URL(`http://[${address}]/`).hostname.slice(1, -1)

// The eight 16-bit groups of an address in canonical form (hex groups only).
function expand (address: string): number[] {
  const [head, tail] = address.split('::') as [string, string | undefined]
  const part = (s: string | undefined) => s ? s.split(':').map((g) => parseInt(g, 16)) : []
  const left = part(head)
  const right = part(tail)
  return tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}
