import t from 'tap'
import { STATUS_CODES } from 'node:http'
import type { InjectOptions } from 'fastify'
import { buildTestApp, openTestDatabase } from '../helper.ts'
import { StandInIdp } from '../support/idp-server.ts'
import { setRole } from '../../db/auth.ts'
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../lib/auth/api-keys.ts'
import { createApiKey } from '../../db/api-keys.ts'

interface Operation { operationId: string; security?: object[]; responses: Record<string, { content?: Record<string, { examples?: Record<string, { value: { message: string } }> }> }> }

// The bearer check's own messages, answered by every bearer route alike (test/auth covers them).
const bearerMessages = new Set(['Missing authorization header', 'Invalid token', 'Token expired'])
// Statuses whose examples are the route's own (429 and 503 are answered alike by every route).
const ownStatuses = new Set(['400', '401', '403', '404', '502'])

t.test('every error example of a route is an answer that route really gives', async (t) => {
  const idp = await new StandInIdp().start()
  t.teardown(() => idp.stop())
  const handle = await openTestDatabase(t, { sample: true })
  const app = await buildTestApp(t, handle, {}, idp.env())
  const signIn = (await app.inject('/api/auth/identity?code=ok')).json()
  const bearer = { authorization: `Bearer ${signIn.accessToken as string}` }
  // An admin too, for the admin API's own errors (the user above stays a USER: 403 there).
  idp.user = { id: '200000000000000099', username: 'root', discriminator: '0', avatar: null }
  const root = (await app.inject('/api/auth/identity?code=ok')).json()
  await setRole(handle.db, '200000000000000099', 'ADMIN')
  idp.user = { id: '200000000000000001', username: 'tester', discriminator: '4242', avatar: 'abc123' }
  const admin = { authorization: `Bearer ${root.accessToken as string}` }
  const nobody = '/api/admin/users/5d1f3a0e-8c2b-4e7a-9f10-2b6c4d8e0a13'
  const box = 'min_lon=-115.18&min_lat=36.09&max_lon=-115.16&max_lat=36.11'

  // One request per documented example: `${operationId} ${status} ${message}`, with what the stand-in provider must do.
  const triggers: Record<string, { request: InjectOptions; idp?: () => void }> = {
    'listPlacemarks 400 querystring/limit must be <= 1000': { request: { url: '/api/v1/placemarks?limit=1001' } },
    'listPlacemarks 400 querystring/offset must be >= 0': { request: { url: '/api/v1/placemarks?offset=-1' } },
    "listPlacemarks 400 querystring: unknown parameter 'page'": { request: { url: '/api/v1/placemarks?page=2' } },
    ...Object.fromEntries(['kml', 'kmz'].flatMap((ext) => [
      [`export${ext === 'kml' ? 'Kml' : 'Kmz'} 400 querystring/bbox must be four numbers: minlon,minlat,maxlon,maxlat`, { request: { url: `/api/v1/export.${ext}?bbox=1,2,3` } }],
      [`export${ext === 'kml' ? 'Kml' : 'Kmz'} 400 querystring/bbox minlat must be <= maxlat`, { request: { url: `/api/v1/export.${ext}?bbox=0,10,1,5` } }],
      [`export${ext === 'kml' ? 'Kml' : 'Kmz'} 400 querystring/folder must NOT have fewer than 1 characters`, { request: { url: `/api/v1/export.${ext}?folder=` } }],
      [`export${ext === 'kml' ? 'Kml' : 'Kmz'} 400 querystring: unknown parameter 'page'`, { request: { url: `/api/v1/export.${ext}?page=2` } }],
      [`export${ext === 'kml' ? 'Kml' : 'Kmz'} 400 querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end`, { request: { url: `/api/v1/export.${ext}?datetime=yesterday` } }]
    ])),
    'getVectorTile 400 params/z must be <= 22': { request: { url: '/api/v1/tiles/23/0/0.mvt' } },
    'getVectorTile 400 params/x must be a whole number in plain decimal digits (no sign, leading zero, point, exponent or hex)': { request: { url: '/api/v1/tiles/1/01/0.mvt' } },
    'getVectorTile 400 params/x must be <= 1 at zoom 1': { request: { url: '/api/v1/tiles/1/2/0.mvt' } },
    'getTileJson 400 querystring/datetime must be an RFC 3339 date-time or date, or an interval start/end with .. for an open end': { request: { url: '/api/v1/tiles.json?datetime=yesterday' } },
    'getIcon 400 params/* must be a relative path of the KMZ without . or .. segments': { request: { url: '/api/v1/icons/images/%5Cicon-1.png' } },
    'getIcon 404 Icon images/icon-99.png not found': { request: { url: '/api/v1/icons/images/icon-99.png' } },
    'getPlacemark 400 params/id must be integer': { request: { url: '/api/v1/placemarks/first' } },
    'getPlacemark 400 params/id must be >= 1': { request: { url: '/api/v1/placemarks/0' } },
    'getPlacemark 404 Placemark 999999 not found': { request: { url: '/api/v1/placemarks/999999' } },
    'listPlacemarksInBbox 400 querystring must have required property \'min_lon\'': { request: { url: '/api/v1/spatial/bbox?min_lat=36&max_lon=-115&max_lat=37' } },
    'listPlacemarksInBbox 400 querystring/min_lat must be <= 90': { request: { url: '/api/v1/spatial/bbox?min_lon=-116&min_lat=91&max_lon=-115&max_lat=37' } },
    'listPlacemarksInBbox 400 querystring/min_lat must be <= max_lat': { request: { url: '/api/v1/spatial/bbox?min_lon=-116&min_lat=37&max_lon=-115&max_lat=36' } },
    'listPlacemarksInBbox 400 querystring/limit must be <= 10000': { request: { url: `/api/v1/spatial/bbox?${box}&limit=10001` } },
    'ogcPlacemarkItems 400 querystring/limit must be <= 10000': { request: { url: '/ogc/collections/placemarks/items?limit=10001' } },
    'ogcPlacemarkItems 400 querystring/bbox must be 4 numbers (minlon,minlat,maxlon,maxlat) or 6 with heights, separated by commas': { request: { url: '/ogc/collections/placemarks/items?bbox=1,2,3' } },
    'ogcPlacemarkItem 404 Feature 999999 not found': { request: { url: '/ogc/collections/placemarks/items/999999' } },
    'listGuildGhosts 400 querystring must have required property \'guildId\'': { request: { url: '/api/ghosts', headers: bearer } },
    'listGuildGhosts 400 querystring/since must be an ISO 8601 date-time': { request: { url: '/api/ghosts?guildId=900000000000000001&since=yesterday', headers: bearer } },
    'listGuildGhosts 400 querystring/limit must be <= 1000': { request: { url: '/api/ghosts?guildId=900000000000000001&limit=1001', headers: bearer } },
    'listGuildGhosts 400 querystring/since must be before until': { request: { url: '/api/ghosts?guildId=900000000000000001&since=2025-01-02&until=2025-01-01', headers: bearer } },
    'listGuildGhosts 403 Insufficient permissions': { request: { url: '/api/ghosts?guildId=700000000000000001', headers: bearer } },
    'adminGetUser 403 Insufficient permissions': { request: { url: nobody, headers: bearer } },
    'adminGetUser 404 User not found': { request: { url: nobody, headers: admin } },
    'adminReadAudit 400 Invalid cursor': { request: { url: '/api/admin/audit?cursor=forged', headers: admin } },
    'adminReadAudit 403 Insufficient permissions': { request: { url: '/api/admin/audit', headers: bearer } },
    'adminSearchUsers 400 querystring/limit must be <= 1000': { request: { url: '/api/admin/users?limit=1001', headers: admin } },
    'adminSearchUsers 403 Insufficient permissions': { request: { url: '/api/admin/users', headers: bearer } },
    'adminSetRole 400 body/role must be equal to one of the allowed values': { request: { method: 'PATCH', url: `/api/admin/users/${root.user.id as string}`, payload: { role: 'OWNER' }, headers: admin } },
    'adminSetRole 403 Insufficient permissions': { request: { method: 'PATCH', url: nobody, payload: { role: 'USER' }, headers: bearer } },
    'adminSetRole 404 User not found': { request: { method: 'PATCH', url: nobody, payload: { role: 'USER' }, headers: admin } },
    'adminSignOutUser 403 Insufficient permissions': { request: { method: 'DELETE', url: `${nobody}/sessions`, headers: bearer } },
    'adminSignOutUser 404 User not found': { request: { method: 'DELETE', url: `${nobody}/sessions`, headers: admin } },
    'getSecurityHistory 400 Invalid cursor': { request: { url: '/api/auth/history?cursor=forged', headers: bearer } },
    'signOutEverywhere 400 querystring/scope must be equal to one of the allowed values': { request: { method: 'DELETE', url: '/api/auth/sessions?scope=some', headers: bearer } },
    'listTimelineEvents 400 querystring/from must be an ISO 8601 date-time': { request: { url: '/api/v1/timeline/events?from=yesterday' } },
    'listTimelineEvents 400 querystring/from must be before to': { request: { url: '/api/v1/timeline/events?from=2017-10-03&to=2017-10-02' } },
    'getTimeline 400 querystring/from must be an ISO 8601 date-time': { request: { url: '/api/v1/timeline?from=yesterday' } },
    'getTimeHistogram 400 querystring/start must be an RFC 3339 date-time with its zone': { request: { url: '/api/v1/time-histogram?start=2017-10-01T00:00:00&step=3600000&bins=24' } },
    'getTimeHistogram 400 querystring/bins and step reach past the year 9999': { request: { url: '/api/v1/time-histogram?start=9999-12-31T00:00:00Z&step=86400000&bins=2' } },
    'getTimeline 400 querystring/from must be before to': { request: { url: '/api/v1/timeline?from=2017-10-03&to=2017-10-02' } },
    'revokeSession 404 Session not found': { request: { method: 'DELETE', url: '/api/auth/sessions/5d1f3a0e-8c2b-4e7a-9f10-2b6c4d8e0a13', headers: bearer } },
    'refreshTokens 400 body/refreshToken must NOT have fewer than 1 characters': { request: { method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: '' } } },
    'refreshTokens 401 Invalid refresh token': { request: { method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: 'not-a-token' } } },
    'signIn 400 querystring must have required property \'code\'': { request: { url: '/api/auth/identity' } },
    'startSignIn 400 querystring/return must NOT have more than 2048 characters': { request: { url: `/api/auth/identity/login?return=/${'a'.repeat(2048)}` } },
    'signIn 401 Invalid authorization code': { request: { url: '/api/auth/identity?code=bad' } },
    'signIn 401 Invalid state': { request: { url: '/api/auth/identity?code=ok&state=forged' } },
    'signIn 403 The identity provider did not grant the identify and guilds scopes': { request: { url: '/api/auth/identity?code=ok' }, idp: () => { idp.mode = 'missing-scope' } },
    'signIn 502 Identity provider unavailable': { request: { url: '/api/auth/identity?code=ok' }, idp: () => { idp.mode = 'server-error' } },
    'signIn 502 Identity provider returned an unusable answer': { request: { url: '/api/auth/identity?code=ok' }, idp: () => { idp.rawUser = '[]' } },
    'getJsonWebKeySet 404 No public keys: access tokens are signed with HS256': { request: { url: '/.well-known/jwks.json' } }
  }

  // The analytics routes' examples: the common ones on each, then each route's own.
  const analytics: [string, string][] = [['listGuildLurkers', '/api/lurkers'], ['getGuildHeatmap', '/api/heatmap'], ['listGuildRoleDrift', '/api/roles'],
    ['getGuildClientDrift', '/api/clients'], ['listGuildBehaviourShifts', '/api/shifts'], ['listGuildSuspicion', '/api/suspicion'],
    ['listMemberActivity', '/api/members/100000000000000001/activity'], ['getGuildOverview', '/api/overview']]
  const allowed = 'guildId=900000000000000001'
  for (const [operation, path] of analytics) {
    triggers[`${operation} 400 querystring must have required property 'guildId'`] = { request: { url: path, headers: bearer } }
    triggers[`${operation} 400 querystring/since must be before until`] = { request: { url: `${path}?${allowed}&since=2025-01-02&until=2025-01-01`, headers: bearer } }
    triggers[`${operation} 403 Insufficient permissions`] = { request: { url: `${path}?guildId=700000000000000001`, headers: bearer } }
  }
  const own: [string, string][] = [
    ['listGuildLurkers 400 querystring/minPresence must be >= 1', `/api/lurkers?${allowed}&minPresence=0`],
    ['getGuildHeatmap 400 querystring/timeZone: unknown time zone "Mars/Olympus"', `/api/heatmap?${allowed}&timeZone=Mars/Olympus`],
    ['listGuildRoleDrift 400 querystring/limit must be <= 1000', `/api/roles?${allowed}&limit=1001`],
    ['getGuildClientDrift 400 querystring/until must be an ISO 8601 date-time', `/api/clients?${allowed}&until=soon`],
    ['listGuildBehaviourShifts 400 querystring/minEvents must be <= 100000', `/api/shifts?${allowed}&minEvents=100001`],
    ['listGuildSuspicion 400 querystring/minScore must be <= 100', `/api/suspicion?${allowed}&minScore=101`],
    ['listGuildSuspicion 400 querystring/userId must NOT have more than 64 characters', `/api/suspicion?${allowed}&userId=${'u'.repeat(65)}`],
    ['listMemberActivity 400 querystring/types: unknown type "voice" (known: message, typing, message_delete, reaction, presence, role_change, join, leave)',
      `/api/members/100000000000000001/activity?${allowed}&types=voice`],
    ['listMemberActivity 400 querystring/cursor is not a cursor of this query', `/api/members/100000000000000001/activity?${allowed}&cursor=forged`],
    ['getGuildOverview 400 querystring/timeZone: unknown time zone "Mars/Olympus"', `/api/overview?${allowed}&timeZone=Mars/Olympus`],
    ['getGuildOverview 400 querystring/since: the window from since to until must be at most 400 days', `/api/overview?${allowed}&since=2024-01-01&until=2025-06-01`],
    ['listReadableGuilds 400 querystring/limit must be <= 1000', '/api/guilds?limit=1001'],
    ['streamGuildActivity 400 params/guildId must NOT have more than 64 characters', `/api/guilds/${'9'.repeat(65)}/events`],
    ['streamGuildActivity 403 Insufficient permissions', '/api/guilds/700000000000000001/events']
  ]
  for (const [key, url] of own) triggers[key] = { request: { url, headers: bearer } }
  // Ingestion, with a key for the guild 700000000000000001 only.
  const apiKey = generateApiKey()
  await createApiKey(handle.db, { name: 'docs', keyHash: hashApiKey(apiKey), prefix: apiKeyPrefix(apiKey), guildIds: ['700000000000000001'] })
  const ingest = (events: unknown[], headers: Record<string, string> = { 'x-api-key': apiKey }): InjectOptions => ({ method: 'POST', url: '/api/activity', headers, payload: { events } })
  const event = { type: 'message', guildId: '700000000000000001', channelId: 'c', userId: 'u', username: 'n', createdAt: '2026-01-01T00:00:00Z' }
  triggers['ingestActivity 400 2 invalid events; nothing was stored'] = { request: ingest([{ ...event, channelId: undefined }, event, { ...event, createdAt: 'now' }]) }
  triggers['ingestActivity 400 body/events must NOT have more than 1000 items'] = { request: ingest(Array.from({ length: 1001 }, () => event)) }
  triggers['ingestActivity 401 Missing X-API-Key header'] = { request: ingest([event], {}) }
  triggers['ingestActivity 401 Invalid API key'] = { request: ingest([event], { 'x-api-key': 'gak_unknown' }) }
  triggers['ingestActivity 403 This API key may not send events of guild 700000000000000002'] = { request: ingest([{ ...event, guildId: '700000000000000002' }]) }

  // The state check needs the state cookie of a sign-in started here.
  const login = await app.inject({ url: '/api/auth/identity/login', headers: { host: new URL(app.config.PUBLIC_URL).host } })
  t.equal(login.statusCode, 302)
  const stateCookie = login.cookies.find((c) => c.name === 'oauth_state')!
  triggers['signIn 401 Invalid state'].request.cookies = { oauth_state: stateCookie.value }

  const doc = app.swagger() as unknown as { paths: Record<string, Record<string, Operation>> }
  const documented: string[] = []
  for (const ops of Object.values(doc.paths)) {
    for (const op of Object.values(ops)) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (!ownStatuses.has(status)) continue
        for (const example of Object.values(response.content?.['application/json']?.examples ?? {})) {
          if (status === '401' && op.security && bearerMessages.has(example.value.message)) continue
          documented.push(`${op.operationId} ${status} ${example.value.message}`)
        }
      }
    }
  }
  t.same([...documented].sort(), Object.keys(triggers).sort(), 'each documented example has its request here, and no other')

  for (const key of documented) {
    const trigger = triggers[key]
    if (!trigger) continue
    idp.mode = 'ok'
    idp.rawUser = null
    trigger.idp?.()
    const status = Number(key.split(' ')[1])
    const message = key.split(' ').slice(2).join(' ')
    const res = await app.inject(trigger.request)
    const body = res.json()
    // Invalid events are also listed one by one (test/analytics/ingest.test.ts checks the list).
    if (key.startsWith('ingestActivity 400 ') && Array.isArray(body.errors)) delete body.errors
    t.same({ status: res.statusCode, body }, { status, body: { error: STATUS_CODES[status], message } }, key)
  }
})
