import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

// The redirect target of the development sign-in: it trades the code for tokens and shows them. Its
// script is a file of its own (/auth/callback.js): the Content-Security-Policy allows no inline script.
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signed in</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<style>body{font:16px system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}textarea{width:100%;font:13px monospace}pre{background:#f6f8fa;padding:.8rem;overflow:auto}.error{color:#b00020}</style></head>
<body><h1 id="title">Signing in…</h1>
<p id="error" class="error"></p>
<section id="result" hidden>
<p>Paste this into <a href="/api/docs">/api/docs</a> → <b>Authorize</b>:</p>
<textarea id="authorization" rows="3" readonly></textarea>
<button id="copy" type="button">Copy</button>
<h2>Access token</h2><textarea id="access-token" rows="4" readonly></textarea>
<h2>Refresh token</h2><textarea id="refresh-token" rows="3" readonly></textarea>
<h2>User</h2><pre id="user"></pre>
<p><a href="/api/docs">Open the API docs</a> · <a href="/api/auth/identity/login">Sign in again</a></p>
</section>
<script src="/auth/callback.js"></script></body></html>`

const script = `"use strict";
(async () => {
  const params = new URLSearchParams(location.search)
  const query = new URLSearchParams({ code: params.get('code') || '' })
  if (params.has('state')) query.set('state', params.get('state'))
  const res = await fetch('/api/auth/identity?' + query, { credentials: 'same-origin' })
  const body = await res.json()
  if (!res.ok) {
    document.getElementById('title').textContent = 'Sign-in failed'
    document.getElementById('error').textContent = res.status + ' ' + body.error + ': ' + body.message
    return
  }
  history.replaceState(null, '', location.pathname)
  document.getElementById('title').textContent = 'Signed in as ' + body.user.username
  document.getElementById('authorization').value = 'Bearer ' + body.accessToken
  document.getElementById('access-token').value = body.accessToken
  document.getElementById('refresh-token').value = body.refreshToken
  document.getElementById('user').textContent = JSON.stringify(body.user, null, 2)
  document.getElementById('result').hidden = false
  document.getElementById('copy').onclick = () => navigator.clipboard.writeText(document.getElementById('authorization').value)
})()
`

const callback: FastifyPluginAsyncTypebox = async (app) => {
  if (!app.config.devIdp) return
  // Its address holds the authorization code, and the page shows the tokens: kept by no cache.
  app.get('/callback', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('pragma', 'no-cache').send(page))
  app.get('/callback.js', { schema: { hide: true } }, async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(script))
}

export default callback
