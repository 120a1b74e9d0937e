import t from 'tap'
import SwaggerParser from '@apidevtools/swagger-parser'
import { buildApp } from '../helper.ts'
import { openTestDatabase, testConfig } from '../helper.ts'

t.test('the served OpenAPI document is valid and lists every route', async (t) => {
  const handle = await openTestDatabase(t, 'pglite')
  const routes: { method: string; url: string; hidden: boolean }[] = []
  const app = await buildApp({
    config: testConfig(),
    db: handle,
    logger: false,
    onRoute: (route) => {
      const hidden = Boolean((route.schema as { hide?: boolean } | undefined)?.hide)
      for (const method of [route.method].flat()) routes.push({ method, url: route.url, hidden })
    }
  })
  await app.ready()
  t.teardown(() => app.close())

  const res = await app.inject('/api/docs/json')
  t.equal(res.statusCode, 200)
  const doc = res.json()
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'valid OpenAPI 3')
  t.ok(doc.components.securitySchemes.bearerAuth, 'bearer scheme for the Authorize dialog')

  const documented = routes.filter((r) => r.method !== 'HEAD' && !r.hidden && !r.url.startsWith('/api/docs'))
  t.ok(documented.length >= 8, `${documented.length} routes`)
  for (const { method, url } of documented) {
    const path = url.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1')
    const op = doc.paths[path]?.[method.toLowerCase()] ?? doc.paths[`${path}/`]?.[method.toLowerCase()]
    if (!t.ok(op, `${method} ${url} is documented`)) continue
    const statuses = Object.keys(op.responses ?? {})
    t.ok(statuses.some((s) => /^[23]/.test(s)), `${method} ${url} has a success response`)
    t.ok(statuses.some((s) => /^[45]/.test(s)), `${method} ${url} has an error response`)
    t.ok(op.summary, `${method} ${url} has a summary`)
    t.ok(op.tags?.length, `${method} ${url} has a tag`)
  }
})
