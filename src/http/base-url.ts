// This instance's own address, ending in /v1. Every absolute URL it writes
// (Link headers, its entry in the OpenAPI servers) starts with it, never
// with anything taken from a request (docs/CONFIGURATION.md). With PORT=0
// and no address configured, the port is known only once listening: it is
// worked out on the first call after that, once.
import type { AddressInfo } from 'node:net'
import type { Config } from '../config.js'

export function selfBaseUrl (
  config: Pick<Config, 'selfBaseUrl' | 'selfBaseUrlIsLocal' | 'port'>,
  listeningOn: () => AddressInfo | string | null
): () => string {
  let resolved = config.selfBaseUrlIsLocal && config.port === 0 ? undefined : config.selfBaseUrl
  return () => {
    if (resolved !== undefined) return resolved
    const address = listeningOn()
    if (address === null || typeof address === 'string') return config.selfBaseUrl
    resolved = config.selfBaseUrl.replace(/:0\/v1$/, `:${address.port}/v1`)
    return resolved
  }
}
