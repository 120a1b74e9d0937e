import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ts from 'typescript'
import openapiTS, { astToString } from 'openapi-typescript'
import { buildApp, openTestDatabase, testConfig } from '../helper.ts'

// A small client over fetch whose types all come from the generated file: `routes` must name every
// operation of the document (a new operation fails to compile until it is added here), and each call
// below uses realistic parameters and reads fields of the answer.
const program = `
import type { components, operations } from './api.ts'

type Id = keyof operations
type Params<K extends Id> = operations[K]['parameters']
type Body<K extends Id> = operations[K] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never
type Responses<K extends Id> = operations[K]['responses']
type Success<K extends Id> = {
  [S in keyof Responses<K>]: S extends 200 ? (Responses<K>[S] extends { content: { 'application/json': infer B } } ? B : never) : S extends 204 | 302 ? null : never
}[keyof Responses<K>]

const routes = {
  getHealth: ['GET', '/health'],
  getReadiness: ['GET', '/health/ready'],
  startSignIn: ['GET', '/api/auth/identity/login'],
  signIn: ['GET', '/api/auth/identity'],
  refreshTokens: ['POST', '/api/auth/refresh'],
  logout: ['POST', '/api/auth/logout'],
  getCurrentUser: ['GET', '/api/auth/me'],
  listSessions: ['GET', '/api/auth/sessions'],
  revokeSession: ['DELETE', '/api/auth/sessions/{id}'],
  signOutEverywhere: ['DELETE', '/api/auth/sessions'],
  getSecurityHistory: ['GET', '/api/auth/history'],
  exportMyData: ['GET', '/api/auth/me/export'],
  deleteMyAccount: ['DELETE', '/api/auth/me'],
  adminSearchUsers: ['GET', '/api/admin/users'],
  adminGetUser: ['GET', '/api/admin/users/{id}'],
  adminSetRole: ['PATCH', '/api/admin/users/{id}'],
  adminSignOutUser: ['DELETE', '/api/admin/users/{id}/sessions'],
  adminReadAudit: ['GET', '/api/admin/audit'],
  getJsonWebKeySet: ['GET', '/.well-known/jwks.json'],
  listGuildGhosts: ['GET', '/api/ghosts'],
  listGuildLurkers: ['GET', '/api/lurkers'],
  getGuildHeatmap: ['GET', '/api/heatmap'],
  listGuildRoleDrift: ['GET', '/api/roles'],
  getGuildClientDrift: ['GET', '/api/clients'],
  listGuildBehaviourShifts: ['GET', '/api/shifts'],
  listGuildSuspicion: ['GET', '/api/suspicion'],
  listMemberActivity: ['GET', '/api/members/{userId}/activity'],
  listReadableGuilds: ['GET', '/api/guilds'],
  getGuildOverview: ['GET', '/api/overview'],
  streamGuildActivity: ['GET', '/api/guilds/{guildId}/events'],
  ingestActivity: ['POST', '/api/activity'],
  getStats: ['GET', '/api/v1/stats'],
  listFolders: ['GET', '/api/v1/folders'],
  listPlacemarks: ['GET', '/api/v1/placemarks'],
  getPlacemark: ['GET', '/api/v1/placemarks/{id}'],
  listPlacemarksInBbox: ['GET', '/api/v1/spatial/bbox'],
  listTimelineEvents: ['GET', '/api/v1/timeline/events'],
  getTimeline: ['GET', '/api/v1/timeline'],
  getTimeHistogram: ['GET', '/api/v1/time-histogram'],
  exportKml: ['GET', '/api/v1/export.kml'],
  exportKmz: ['GET', '/api/v1/export.kmz'],
  getVectorTile: ['GET', '/api/v1/tiles/{z}/{x}/{y}.mvt'],
  getTileJson: ['GET', '/api/v1/tiles.json'],
  listIcons: ['GET', '/api/v1/icons'],
  getIcon: ['GET', '/api/v1/icons/{*}'],
  ogcLandingPage: ['GET', '/ogc'],
  ogcConformance: ['GET', '/ogc/conformance'],
  ogcApiDefinition: ['GET', '/ogc/api'],
  ogcCollections: ['GET', '/ogc/collections'],
  ogcPlacemarksCollection: ['GET', '/ogc/collections/placemarks'],
  ogcPlacemarksQueryables: ['GET', '/ogc/collections/placemarks/queryables'],
  ogcPlacemarksSchema: ['GET', '/ogc/collections/placemarks/schema'],
  ogcPlacemarkItems: ['GET', '/ogc/collections/placemarks/items'],
  ogcPlacemarkItem: ['GET', '/ogc/collections/placemarks/items/{featureId}']
} as const satisfies Record<Id, readonly [string, string]>

let token = ''

async function call<K extends Id>(id: K, params: Params<K>, body?: Body<K>): Promise<Success<K>> {
  const [method, template] = routes[id]
  const { path, query } = params as { path?: Record<string, string | number>; query?: Record<string, string | number | undefined> }
  const url = new URL(template.replace(/\\{(\\w+)\\}/g, (_, name: string) => encodeURIComponent(String(path?.[name]))), 'http://localhost:8080')
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value))
  const headers: Record<string, string> = token ? { authorization: 'Bearer ' + token } : {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' })
  if (res.status >= 400) {
    const error: components['schemas']['Error'] = await res.json()
    throw new Error(error.error + ': ' + error.message)
  }
  return (res.status === 200 ? await res.json() : null) as Success<K>
}

export async function tour(): Promise<string[]> {
  const seen: string[] = []
  const health = await call('getHealth', {})
  const ready = await call('getReadiness', {})
  seen.push(health.status, ready.status)
  await call('startSignIn', {})
  const signedIn = await call('signIn', { query: { code: 'NhhvTDYsFcdgNLnnLijcl7Ku7bEEeee' } })
  const user: components['schemas']['User'] = signedIn.user
  token = signedIn.accessToken
  const pair = await call('refreshTokens', {}, { refreshToken: signedIn.refreshToken })
  token = pair.accessToken
  const me = await call('getCurrentUser', {})
  const guilds: string[] = me.guilds.map((g) => g.id + ':' + g.permissions)
  const role: 'USER' | 'ADMIN' = user.role
  const { sessions } = await call('listSessions', {})
  const other = sessions.find((s) => !s.current)
  if (other) await call('revokeSession', { path: { id: other.id } })
  const ghosts = await call('listGuildGhosts', { query: { guildId: guilds[0] ?? '700000000000000001', since: '2025-12-01T00:00:00Z', limit: 5 } })
  const scores: number[] = ghosts.ghosts.map((g) => g.ghostScore)
  const stats = await call('getStats', {})
  const total: number = stats.total_placemarks + (stats.geometry_types.Point ?? 0)
  const { folders, count } = await call('listFolders', {})
  const page = await call('listPlacemarks', { query: { limit: 10, offset: 0, folder: folders[0] } })
  const first: components['schemas']['Placemark'] | undefined = page.placemarks[0]
  const kind: 'Point' | 'LineString' | 'Polygon' | undefined = first?.geometry_type
  const one = await call('getPlacemark', { path: { id: 2 } })
  const keys: string[] = one.extended_data.map((entry) => entry.key + '=' + entry.value)
  const box = await call('listPlacemarksInBbox', { query: { min_lon: -115.18, min_lat: 36.09, max_lon: -115.16, max_lat: 36.11, limit: 100 } })
  const inBox: number = box.count + box.bbox.min_lon
  const events = await call('listTimelineEvents', {})
  const instants: (string | null)[] = events.map((e) => e.timestamp)
  const timeline = await call('getTimeline', {})
  const where: number | undefined = timeline.events[0]?.location?.lat
  const histogram = await call('getTimeHistogram', { query: { start: '2017-10-01T00:00:00Z', step: 3600000, bins: 24, folder: folders[0] } })
  const perHour: number[] = histogram.counts
  // Downloads: only their parameters are typed (the answer is KML or a zip, not JSON).
  void call('exportKml', { query: { folder: folders[0], bbox: '-115.18,36.09,-115.16,36.11' } })
  void call('exportKmz', {})
  // A vector tile: only its path is typed (the answer is protobuf bytes, or 204).
  void call('getVectorTile', { path: { z: '14', x: '2950', y: '6428' } })
  // An icon of the KMZ: only its path is typed (the answer is an image).
  void call('getIcon', { path: { '*': 'images/icon-1.png' } })
  const tileset = await call('getTileJson', {})
  const template: string = tileset.tiles[0] + tileset.vector_layers[0].id + String(tileset.bounds[0] + tileset.maxzoom)
  seen.push(template)
  const landing = await call('ogcLandingPage', {})
  const data: string | undefined = landing.links.find((l) => l.rel === 'data')?.href
  const { conformsTo } = await call('ogcConformance', {})
  const { collections } = await call('ogcCollections', {})
  const extent: number[] | undefined = collections[0]?.extent.spatial.bbox[0]
  await call('ogcPlacemarksCollection', {})
  const schema = await call('ogcPlacemarksSchema', {})
  seen.push(String(Object.keys(schema).length))
  await call('ogcPlacemarkItems', { query: { limit: 10, bbox: '-115.18,36.09,-115.16,36.11', geometry_type: 'Point' } })
  await call('ogcPlacemarkItem', { path: { featureId: '2' } })
  seen.push(String(data), String(conformsTo.length + (extent?.length ?? 0)))
  await call('logout', {})
  seen.push(role, String(scores.length + total + count + inBox + keys.length + instants.length + (where ?? 0)), String(kind))
  return seen
}
`

// Calls the generated types must refuse: a wrong parameter type, a missing path parameter, an unknown
// operation, and a field the answer does not have.
const wrong = `
import type { operations } from './api.ts'
declare function call<K extends keyof operations>(id: K, params: operations[K]['parameters']): void
call('listPlacemarks', { query: { limit: 'ten' } })
call('getPlacemark', {})
call('listPlacemark', {})
declare const page: operations['listPlacemarks']['responses'][200]['content']['application/json']
page.placemarks[0].lat
`

function typeErrors (file: string): string[] {
  const compiled = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true
  })
  return ts.getPreEmitDiagnostics(compiled).map((d) => `${d.file?.fileName.split('/').pop() ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`)
}

t.test('a TypeScript client generated from the document type-checks a program that calls every operation', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig(), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  const doc = (await app.inject('/api/docs/json')).json()

  const dir = await mkdtemp(join(tmpdir(), 'openapi-client-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const generated = astToString(await openapiTS(doc))
  await writeFile(join(dir, 'api.ts'), generated)
  await writeFile(join(dir, 'program.ts'), program)
  await writeFile(join(dir, 'wrong.ts'), wrong)

  const operationIds = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) => Object.values(ops).map((op) => op.operationId))
  for (const id of operationIds) t.match(program, `${id}: [`, `the program knows ${id}`)
  t.match(generated, /export interface operations/)

  t.same(typeErrors(join(dir, 'program.ts')), [], 'the program type-checks against the generated client, unedited')
  const refused = typeErrors(join(dir, 'wrong.ts'))
  t.equal(refused.length, 4, refused.join('\n'))
  t.match(refused.join('\n'), /Type 'string' is not assignable to type 'number'/)
  t.match(refused.join('\n'), /Property 'path' is missing/)
  t.match(refused.join('\n'), /"listPlacemark"/)
  t.match(refused.join('\n'), /Property 'lat' does not exist/)
})
