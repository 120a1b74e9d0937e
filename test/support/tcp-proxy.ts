import net from 'node:net'

// A loopback TCP proxy the tests can cut, black-hole and restore, to make a real database unreachable and back.
export class TcpProxy {
  #server: net.Server | null = null
  #sockets = new Set<net.Socket>()
  #blackholed = false
  port = 0

  private readonly targetPort: number
  private readonly targetHost: string
  constructor (targetPort: number, targetHost: string = '127.0.0.1') {
    this.targetPort = targetPort
    this.targetHost = targetHost
  }

  async start (port = this.port): Promise<number> {
    const server = net.createServer((client) => {
      this.#track(client)
      // A black-holed network: the connection opens, and nothing it sends ever arrives.
      if (this.#blackholed) {
        client.resume()
        return
      }
      const upstream = net.connect(this.targetPort, this.targetHost)
      this.#track(upstream)
      client.pipe(upstream).pipe(client)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    this.port = (server.address() as net.AddressInfo).port
    this.#server = server
    return this.port
  }

  #track (s: net.Socket): void {
    this.#sockets.add(s)
    s.on('close', () => this.#sockets.delete(s))
    s.on('error', () => s.destroy())
  }

  // Refuses new connections and drops the open ones, like a database host going away.
  async stop (): Promise<void> {
    const server = this.#server
    this.#server = null
    for (const s of this.#sockets) s.destroy()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Packets silently dropped: open connections stop carrying data, new ones connect and hear nothing. */
  blackhole (): void {
    this.#blackholed = true
    for (const s of this.#sockets) {
      s.unpipe()
      s.removeAllListeners('data')
      s.on('data', () => {})
    }
  }

  /** The network back: connections that lost data are reset (their protocol state is gone), new ones pass. */
  restore (): void {
    this.#blackholed = false
    for (const s of this.#sockets) s.destroy()
  }
}
