import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { contentSecurityPolicy, pageRoute } from '../../plugins/external/security-headers.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const require = createRequire(import.meta.url)
// Chart.js's own distribution folder (its package exports only the entry points), served by this server: no CDN.
const chartDist = dirname(require.resolve('chart.js'))

// The page's files, named one by one: nothing else of the folder is served.
const PAGE_FILES = new Set(['/dashboard.js', '/dashboard.css', '/charts.js', '/csv.js', '/live.js', '/state.js', '/tables.js', '/dom.js'])

/**
 * The page: markup only. Its scripts (ES modules importing /shared/session.js, and Chart.js) and styles
 * are files of this server; every view is drawn by dashboard.js from the API's answers.
 */
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Guild dashboard</title>
<link rel="icon" href="/map/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/dashboard.css">
<script src="/dashboard/vendor/chart.umd.min.js" defer></script>
<script type="module" src="/dashboard/dashboard.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to the dashboard</a>
<header class="top">
<h1>Guild dashboard</h1>
<p id="connection" class="connection" role="status" data-state="online"></p>
<div id="account" class="account" hidden>
<span id="user"></span>
<button id="sign-out" type="button">Sign out</button>
<button id="sign-out-everywhere" type="button">Sign out everywhere</button>
</div>
</header>
<main id="main" tabindex="-1">
<p id="checking">Checking your session…</p>
<section id="signed-out" class="panel" hidden aria-labelledby="signed-out-title">
<h2 id="signed-out-title">Sign in to see your guilds</h2>
<p>The dashboard shows the activity of the guilds you may read. You come back to this same view after signing in.</p>
<button id="sign-in" type="button">Sign in</button>
</section>
<div id="app" hidden>
<form id="controls" class="controls" aria-label="What to show">
<label>Guild <select id="guild"></select></label>
<label>Window <select id="range">
<option value="24h">Last 24 hours</option>
<option value="7d">Last 7 days</option>
<option value="30d">Last 30 days</option>
<option value="90d">Last 90 days</option>
<option value="custom">Custom dates</option>
</select></label>
<span id="custom" class="custom" hidden>
<label>From <input id="from" type="date" required></label>
<label>To <input id="to" type="date" required></label>
<button id="apply-dates" type="submit">Apply</button>
</span>
<label>Time zone <select id="tz"></select></label>
</form>
<p id="guild-error" class="error" role="alert" hidden></p>
<section id="no-guild" class="panel" hidden aria-labelledby="no-guild-title">
<h2 id="no-guild-title">No guild you may read</h2>
<p>The dashboard shows a guild to its owner, to members who hold the <strong>Administrator</strong> or <strong>Manage Server</strong> (MANAGE_GUILD) permission in it, and to this service's administrators (role ADMIN).</p>
<p>None of the guilds in the list your identity provider gave at your last sign-in passes that rule. If you were given one of these permissions since, sign out and sign in again to refresh the list.</p>
</section>
<div id="guild-view" hidden>
<p class="window-line"><span id="window-label"></span> <span id="live" class="live" data-state="paused"></span> <span id="updated" class="updated"></span></p>
<nav id="views" class="views" aria-label="Views"></nav>
<div id="view" class="view"></div>
</div>
</div>
</main>
</body></html>`

/**
 * `GET /dashboard`: the guild dashboard, a page of the public API (the analytics routes, /api/guilds,
 * /api/overview and the guild's event stream), not part of the API document. Its answer carries the
 * site's Content-Security-Policy with styles from this server only: nothing on the page is inline.
 */
const dashboard: FastifyPluginAsync = async (app) => {
  pageRoute(app, page, { ...contentSecurityPolicy(app.config.MAP_TILE_URL).directives, styleSrc: ["'self'"] })

  await app.register(fastifyStatic, {
    root: join(root, 'public', 'dashboard'),
    prefix: '/',
    decorateReply: false,
    index: false,
    allowedPath: (path) => PAGE_FILES.has(path)
  })
  await app.register(fastifyStatic, {
    root: chartDist,
    prefix: '/vendor/',
    decorateReply: false,
    index: false,
    allowedPath: (path) => path === '/chart.umd.min.js' || path === '/chart.umd.min.js.map'
  })
}

export default dashboard
