// Whom a request without a valid key is counted against: its client
// address, with IPv6 taken by /64 (one customer's whole network, as ISPs
// allot them) and IPv4-mapped IPv6 read as the IPv4 address it is.
import { isIPv4 } from 'node:net'
import ipaddr from 'ipaddr.js'

export function addressSubject (address: string): string {
  // Dotted-quad IPv4, the common case, is already in the form ipaddr.js
  // would print (Node's check takes no leading zeros): parsing it again was
  // a measurable part of every refusal.
  if (isIPv4(address)) return `addr:${address}`
  // Only a forwarded header can make this anything but an address; such
  // requests share one bucket, so that inventing values gains nothing.
  if (!ipaddr.isValid(address)) return 'addr:unknown'
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6
    if (v6.isIPv4MappedAddress()) {
      parsed = v6.toIPv4Address()
    } else {
      return `addr:${v6.parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`
    }
  }
  return `addr:${parsed.toString()}`
}
