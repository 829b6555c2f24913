// The environment of an instance of the scaled-out service: the variables
// compose.yaml gives both its instances, and the ones the image test runs
// its two containers on PostgreSQL and Redis with. Written once, here, so
// that what compose.yaml runs is what the image test ran; only the
// addresses differ from one place to the other.

export interface Addresses {
  databaseUrl: string
  redisUrl: string
  /** Where clients reach the service: the balancer's address, or the instance's own. */
  publicBaseUrl: string
  adminHost: string
  adminPort: number
}

export function scaledOutEnvironment (where: Addresses): Record<string, string> {
  return {
    DATABASE_URL: where.databaseUrl,
    REDIS_URL: where.redisUrl,
    // One balancer in front, adding the client's address to X-Forwarded-For;
    // with no balancer (the image test), no such header comes and the
    // socket's address is the client's.
    TRUST_PROXY: '1',
    PUBLIC_BASE_URL: where.publicBaseUrl,
    ADMIN_HOST: where.adminHost,
    ADMIN_PORT: String(where.adminPort)
  }
}
