// REDIS_URL: `redis://` (`rediss://`) for one server, or `redis+cluster://` with
// HOST:PORT,HOST:PORT,… seed nodes for a Redis Cluster (docs/CONFIGURATION.md): one
// variable stays the one switch, the scheme naming the client as `redis+sentinel://`
// does elsewhere. `URL` cannot hold several hosts, so the cluster form is parsed here.

interface RedisNode {
  host: string
  port: number
}

interface Credentials {
  username: string | undefined
  password: string | undefined
  tls: boolean
}

export type RedisTarget =
  | { kind: 'single', url: string }
  | ({ kind: 'cluster', nodes: RedisNode[] } & Credentials)

const DEFAULT_PORT = 6379

/** Throws a RangeError saying what is wrong; the caller names the variable. */
export function parseRedisUrl (raw: string): RedisTarget {
  const scheme = /^([a-z+]+):\/\//i.exec(raw)?.[1]?.toLowerCase()
  if (scheme === 'redis' || scheme === 'rediss') {
    single(raw)
    return { kind: 'single', url: raw }
  }
  if (scheme === 'redis+cluster' || scheme === 'rediss+cluster') return cluster(raw, scheme === 'rediss+cluster')
  throw new RangeError('must start with redis://, rediss://, redis+cluster:// or rediss+cluster://')
}

function single (raw: string): void {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new RangeError('is not a valid URL')
  }
  if (url.hostname === '') throw new RangeError('names no host')
  if (!/^\/?(\d+)?$/.test(url.pathname)) throw new RangeError('may only have a database number as its path (/0 to /15)')
}

function cluster (raw: string, tls: boolean): RedisTarget {
  const rest = raw.slice(raw.indexOf('://') + 3)
  const at = rest.lastIndexOf('@')
  const userinfo = at === -1 ? undefined : rest.slice(0, at)
  const hosts = at === -1 ? rest : rest.slice(at + 1)
  const nodes = hosts.split(',').map((hostPort) => {
    let url: URL
    try {
      url = new URL(`redis://${hostPort.trim()}`)
    } catch {
      throw new RangeError(`lists "${hostPort}", which is not HOST:PORT`)
    }
    if (url.hostname === '' || (url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.username !== '') {
      throw new RangeError(`lists "${hostPort}", which is not HOST:PORT (a cluster has no database number; credentials go before the first host)`)
    }
    // The URL parser keeps IPv6 brackets in `hostname`; the client wants the bare address.
    return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port === '' ? DEFAULT_PORT : Number(url.port) }
  })
  let username: string | undefined
  let password: string | undefined
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':')
    username = decodeURIComponent(colon === -1 ? userinfo : userinfo.slice(0, colon)) || undefined
    password = colon === -1 ? undefined : decodeURIComponent(userinfo.slice(colon + 1))
  }
  return { kind: 'cluster', nodes, username, password, tls }
}
