import { createServer, type AddressInfo } from 'node:net'

/**
 * A loopback port the kernel has just handed out and taken back: for a server started in another process
 * whose address must be known before it listens (the tests' and the bench's). A random port could be one
 * that a client socket already holds.
 */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
