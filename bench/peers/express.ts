import express from 'express'
import type { AddressInfo } from 'node:net'
import { byPath, readAnswers } from './answers.ts'

// A bare Express 5 peer of the benchmark: default settings, one route per path, answers from memory.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = express()
for (const [path, answers] of byPath(readAnswers(process.argv[2]))) {
  app.get(path, (req, res) => {
    const answer = answers.get(req.originalUrl)
    if (!answer) {
      res.sendStatus(404)
      return
    }
    res.set('content-type', answer.contentType).send(answer.body)
  })
}
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`)
})
