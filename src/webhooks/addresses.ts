// Which addresses webhooks may be sent to (docs/WEBHOOKS.md: Safe by default):
// public unicast ones only, as OWASP's SSRF cheat sheet advises for URLs that
// people type. The lookup given to each delivery's connection checks every
// address a name resolves to and connects to the one it checked, so that a
// name cannot resolve to a public address for the check and a private one
// for the connection (DNS rebinding).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import type { LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Whether a literal address is public: what ipaddr.js's range() calls
 * `unicast`, after an IPv4-mapped IPv6 address is read as its IPv4 one.
 * Loopback, private, link-local (169.254.169.254, the cloud metadata
 * address, among them), unique-local, CGNAT, unspecified, multicast,
 * reserved and the IPv6 ranges that embed IPv4 addresses (6to4, Teredo,
 * NAT64) are not.
 */
export function isPublicAddress (address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  return parsed.range() === 'unicast'
}

/** A URL's host as an address when it is one (`[::1]` unbracketed), else undefined. */
export function literalAddress (hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) ? bare : undefined
}

class PrivateAddressError extends Error {
  override name = 'PrivateAddressError'
  readonly code = 'EPRIVATEADDRESS'
}

/**
 * A lookup for `http.request` that refuses a name when any of its addresses
 * is not public, and otherwise connects to the first of those it checked.
 */
export const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error !== null) {
      callback(error, '', 4)
      return
    }
    const refused = addresses.find((address) => !isPublicAddress(address.address))
    const first = addresses[0]
    if (refused !== undefined || first === undefined) {
      callback(new PrivateAddressError(`${hostname} resolves to ${refused?.address ?? 'no address'}, which is not a public address`), '', 4)
      return
    }
    if (options.all === true) callback(null, addresses)
    else callback(null, first.address, first.family)
  })
}
