import { readFileSync } from 'node:fs'
import type { Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { Express } from 'express'

// One answer a peer serves: the exact bytes and content-type our server gave for the URL, and the
// headers it sent with them (the floor sends them all; the other peers send their own).
export interface Answer { url: string; contentType: string; body: Buffer; headers: Record<string, string | string[]> }

// Reads the peer's answers file: a JSON array of {url, contentType, bodyBase64, headers}.
export function readAnswers (file: string): Answer[] {
  const entries = JSON.parse(readFileSync(file, 'utf8')) as { url: string; contentType: string; bodyBase64: string; headers?: Record<string, string | string[]> }[]
  return entries.map((e) => ({ url: e.url, contentType: e.contentType, body: Buffer.from(e.bodyBase64, 'base64'), headers: e.headers ?? {} }))
}

// The answers grouped by path: the framework routes on the path, the query picks the answer.
export function byPath (answers: Answer[]): Map<string, Map<string, Answer>> {
  const paths = new Map<string, Map<string, Answer>>()
  for (const answer of answers) {
    const path = new URL(answer.url, 'http://x').pathname
    if (!paths.has(path)) paths.set(path, new Map())
    paths.get(path)!.set(answer.url, answer)
  }
  return paths
}

/**
 * One route per path on a Fastify peer, answering from memory: the content-type and the bytes, or with
 * `allHeaders` every header our server sent, as one object made at start-up.
 */
export function fastifyRoutes (app: FastifyInstance, file: string, { allHeaders = false } = {}): void {
  for (const [path, answers] of byPath(readAnswers(file))) {
    app.get(path, (request, reply) => {
      const answer = answers.get(request.url)
      if (!answer) return reply.code(404).send()
      if (allHeaders) reply.headers(answer.headers).send(answer.body)
      else reply.type(answer.contentType).send(answer.body)
    })
  }
}

// One route per path on an Express peer, answering the content-type and the bytes from memory.
export function expressRoutes (app: Express, file: string): void {
  for (const [path, answers] of byPath(readAnswers(file))) {
    app.get(path, (req, res) => {
      const answer = answers.get(req.originalUrl)
      if (!answer) {
        res.sendStatus(404)
        return
      }
      res.set('content-type', answer.contentType).send(answer.body)
    })
  }
}

// Listens on a free loopback port and prints it on stdout: the bench waits for that line.
export async function listenFastify (app: FastifyInstance): Promise<void> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`)
}

export function listenExpress (app: Express): Server {
  const server = app.listen(0, '127.0.0.1', () => {
    const address = server.address()
    process.stdout.write(`${typeof address === 'object' && address ? address.port : ''}\n`)
  })
  return server
}
