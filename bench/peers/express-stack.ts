import express from 'express'
import helmet from 'helmet'
import cors from 'cors'
import { rateLimit } from 'express-rate-limit'
import { expressRoutes, listenExpress } from './answers.ts'

// The Express stack a user would build for the same answers: Express 5 (its own weak ETag on) with
// helmet, cors and express-rate-limit as their READMEs set them up (the limit's ceiling out of the load
// generator's way), one route per path, answers from memory.
// Argument: the answers file (see answers.ts). Prints its port on stdout once listening.
const app = express()
app.use(helmet())
app.use(cors())
app.use(rateLimit({ windowMs: 15 * 60 * 1000, limit: 1_000_000_000, standardHeaders: 'draft-8', legacyHeaders: false }))
expressRoutes(app, process.argv[2])
listenExpress(app)
