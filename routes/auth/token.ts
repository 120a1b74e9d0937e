import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

// Markup only: the script (a module importing /shared/session.js) and the styles are files of public/auth.
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Access token for the API docs</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/auth/token.css">
<script type="module" src="/auth/token.js"></script>
</head>
<body><main>
<h1 id="title">Checking your session…</h1>
<p id="error" class="error" role="alert"></p>
<section id="signed-out" hidden>
<p>Sign in to get an access token for the API docs.</p>
<button id="sign-in" type="button">Sign in</button>
</section>
<section id="signed-in" hidden>
<p><label for="authorization">Paste this into <a href="/api/docs">/api/docs</a> → <b>Authorize</b>:</label></p>
<textarea id="authorization" rows="3" readonly></textarea>
<button id="copy" type="button">Copy</button>
<h2><label for="access-token">Access token</label></h2>
<textarea id="access-token" rows="4" readonly></textarea>
<p>It expires at <span id="expires"></span> and is renewed a minute before, in every open tab of this page.</p>
<h2>User</h2><pre id="user"></pre>
<p><button id="sign-out" type="button">Sign out</button> <button id="sign-out-everywhere" type="button">Sign out everywhere</button></p>
</section>
</main></body></html>`

/**
 * `GET /auth/token`: the signed-in user's access token for the API docs' Authorize dialog, kept current.
 * A page of the session API like any other: it signs in with `return=` and reads its token through the
 * refresh cookie.
 */
const token: FastifyPluginAsync = async (app) => {
  app.get('/token', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(page))
  await app.register(fastifyStatic, {
    root: join(root, 'public', 'auth'),
    prefix: '/',
    decorateReply: false,
    index: false,
    allowedPath: (path) => path === '/token.js' || path === '/token.css'
  })
}

export default token
