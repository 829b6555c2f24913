// Loopback ports for the servers tests start themselves (PostgreSQL, Redis).
import { createServer, type AddressInfo } from 'node:net'

/** A port the OS says is free now; another process may take it before the server binds it. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
