import http from 'node:http'
import type { AddressInfo } from 'node:net'

export type IdpMode = 'ok' | 'invalid-code' | 'server-error' | 'missing-scope' | 'garbage' | 'redirect'

export interface StandInUser { id: string; username: string; discriminator: string; avatar: string | null }
export interface StandInGuild { id: string; name: string; icon: string | null; owner: boolean; permissions: string }

/** A stand-in OAuth identity provider on loopback whose answers a test can switch. */
export class StandInIdp {
  mode: IdpMode = 'ok'
  user: StandInUser = { id: '200000000000000001', username: 'tester', discriminator: '4242', avatar: 'abc123' }
  guilds: StandInGuild[] = [{ id: '900000000000000001', name: 'Test Guild', icon: null, owner: false, permissions: '32' }]
  readonly requests: { path: string; body: string; authorization?: string }[] = []
  // Where the token endpoint sends its 307 in the 'redirect' mode.
  redirectTo = ''
  // A raw body the user endpoint answers instead of `user`, when set.
  rawUser: string | null = null
  // When set, the token endpoint's good answer carries this many bytes of padding, sent without a
  // content-length in 64 KiB chunks as fast as the reader takes them; tokenBytesWritten counts the bytes
  // of padding handed to the socket before the reader stopped.
  tokenPadding = 0
  tokenBytesWritten = 0
  #server = http.createServer((req, res) => this.#handle(req, res))
  url = ''

  async start (): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
    return this
  }

  async stop (): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  env (): Record<string, string> {
    return {
      IDP_CLIENT_ID: 'test-client',
      IDP_CLIENT_SECRET: 'test-client-secret-value',
      IDP_REDIRECT_URI: 'http://localhost:5173/callback',
      IDP_AUTHORIZE_URL: `${this.url}/authorize`,
      IDP_TOKEN_URL: `${this.url}/token`,
      IDP_USER_URL: `${this.url}/user`,
      IDP_GUILDS_URL: `${this.url}/guilds`
    }
  }

  #handle (req: http.IncomingMessage, res: http.ServerResponse): void {
    let body = ''
    req.on('data', (d) => { body += d })
    req.on('end', () => {
      this.requests.push({ path: req.url ?? '', body, authorization: req.headers.authorization })
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(typeof payload === 'string' ? payload : JSON.stringify(payload))
      }
      if (this.mode === 'server-error') return send(500, { error: 'boom' })
      if (req.url === '/token') {
        if (this.mode === 'redirect') {
          res.writeHead(307, { location: `${this.redirectTo}/token` })
          return res.end()
        }
        const form = new URLSearchParams(body)
        if (this.mode === 'invalid-code' || form.get('code') === 'bad') return send(400, { error: 'invalid_grant' })
        if (this.mode === 'garbage') return send(200, '<html>not json</html>')
        if (this.tokenPadding > 0) return this.#paddedToken(res)
        return send(200, { access_token: 'provider-token', token_type: 'Bearer', scope: this.mode === 'missing-scope' ? 'identify' : 'identify guilds' })
      }
      if (req.headers.authorization !== 'Bearer provider-token') return send(401, { error: 'unauthorized' })
      if (req.url === '/user') return send(200, this.rawUser ?? this.user)
      if (req.url === '/guilds') return send(200, this.guilds)
      send(404, { error: 'not found' })
    })
  }

  #paddedToken (res: http.ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"access_token":"provider-token","token_type":"Bearer","scope":"identify guilds","padding":"')
    const chunk = Buffer.alloc(64 * 1024, 'x')
    let left = this.tokenPadding
    this.tokenBytesWritten = 0
    const pump = () => {
      while (left > 0) {
        if (res.destroyed) return
        const n = Math.min(left, chunk.length)
        left -= n
        this.tokenBytesWritten += n
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          res.once('drain', pump)
          return
        }
      }
      res.end('"}')
    }
    pump()
  }
}
