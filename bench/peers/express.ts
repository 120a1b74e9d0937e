import express from 'express'
import { expressRoutes, listenExpress } from './answers.ts'

// A bare Express 5 peer of the benchmark: default settings, one route per path, answers from memory.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = express()
expressRoutes(app, process.argv[2])
listenExpress(app)
