import t from 'tap'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { buildApp, openTestDatabase, testConfig } from '../helper.ts'

type Json = Record<string, unknown>
interface Found { where: string; example: unknown; schema: Json }

/** The schemas a schema holds: properties, items, additionalProperties and the members of anyOf/oneOf/allOf. */
function children (schema: Json): [string, Json][] {
  const out: [string, Json][] = []
  for (const [name, s] of Object.entries((schema.properties ?? {}) as Record<string, Json>)) out.push([`.${name}`, s])
  if (schema.items && typeof schema.items === 'object') out.push(['[]', schema.items as Json])
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') out.push(['{}', schema.additionalProperties as Json])
  for (const key of ['anyOf', 'oneOf', 'allOf']) for (const [i, s] of ((schema[key] ?? []) as Json[]).entries()) out.push([`/${key}/${i}`, s])
  return out
}

function schemaExamples (where: string, schema: Json, found: Found[]): void {
  if (schema.example !== undefined) found.push({ where, example: schema.example, schema })
  for (const [step, child] of children(schema)) schemaExamples(`${where}${step}`, child, found)
}

/** Every example of an OpenAPI 3.0 document, each with the schema it must satisfy. */
function documentExamples (doc: Json): Found[] {
  const found: Found[] = []
  const components = (doc.components as { schemas: Record<string, Json> }).schemas
  for (const [name, schema] of Object.entries(components)) schemaExamples(`components.schemas.${name}`, schema, found)
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const at = `${method.toUpperCase()} ${path}`
      for (const p of (op.parameters ?? []) as Json[]) {
        const schema = p.schema as Json
        if (p.example !== undefined) found.push({ where: `${at} parameter ${String(p.name)}`, example: p.example, schema })
        schemaExamples(`${at} parameter ${String(p.name)} schema`, schema, found)
      }
      const media: [string, Json][] = []
      for (const [type, m] of Object.entries(((op.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>)) media.push([`${at} request ${type}`, m])
      for (const [status, r] of Object.entries(op.responses as Record<string, Json>)) {
        for (const [name, h] of Object.entries((r.headers ?? {}) as Record<string, Json>)) schemaExamples(`${at} ${status} header ${name}`, h.schema as Json, found)
        for (const [type, m] of Object.entries((r.content ?? {}) as Record<string, Json>)) media.push([`${at} ${status} ${type}`, m])
      }
      for (const [where, m] of media) {
        const schema = m.schema as Json
        if (m.example !== undefined) found.push({ where, example: m.example, schema })
        for (const [name, e] of Object.entries((m.examples ?? {}) as Record<string, { value: unknown }>)) found.push({ where: `${where} example "${name}"`, example: e.value, schema })
        schemaExamples(`${where} schema`, schema, found)
      }
    }
  }
  return found
}

/** The examples that do not validate against their schema, with Ajv's reason (OpenAPI 3.0's nullable included). */
function invalidExamples (doc: Json): { checked: number; invalid: string[] } {
  // References into components.schemas resolve against the document's own components.
  const rewrite = (value: unknown): unknown => JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"openapi#/definitions/'))
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema({ $id: 'openapi', definitions: rewrite((doc.components as Json).schemas) as Json })
  const found = documentExamples(doc)
  const invalid: string[] = []
  for (const { where, example, schema } of found) {
    const validate = ajv.compile(rewrite(schema) as Json)
    if (!validate(example)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)} (${JSON.stringify(example)})`)
  }
  return { checked: found.length, invalid }
}

t.test('every example in the document validates against its own schema', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildApp({ config: testConfig(), db: handle, logger: false })
  await app.ready()
  t.teardown(() => app.close())
  const doc = (await app.inject('/api/docs/json')).json()

  const { checked, invalid } = invalidExamples(doc)
  t.ok(checked >= 150, `${checked} examples checked`)
  t.same(invalid, [], 'none invalid')

  // The check is not vacuous: a wrong parameter example, error example and property example are caught.
  const broken = structuredClone(doc)
  broken.paths['/api/v1/placemarks'].get.parameters.find((p: { name: string }) => p.name === 'limit').example = 5000
  broken.paths['/api/auth/me'].get.responses['401'].content['application/json'].examples['Invalid token'].value = { error: 'Unauthorized' }
  broken.components.schemas.Placemark.properties.id.example = 'four'
  const caught = invalidExamples(broken).invalid
  t.equal(caught.length, 3, caught.join('\n'))
  t.match(caught.join('\n'), /GET \/api\/v1\/placemarks parameter limit: data must be <= 1000/)
  t.match(caught.join('\n'), /401 application\/json example "Invalid token": data must have required property 'message'/)
  t.match(caught.join('\n'), /components\.schemas\.Placemark\.id: data must be integer/)
})
