import t from 'tap'
import { spawnSync } from 'node:child_process'
import module from 'node:module'
import { join } from 'node:path'
import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import { Type } from '../../lib/typebox.ts'
import { compileOnce } from '../../lib/compile-once.ts'
import { sharedSerializerFactory } from '../../plugins/app/serialization.ts'
import { strictValidatorFactory } from '../../plugins/app/validation.ts'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import app, { compileSchemasInBackground, serverOptions } from '../../app.ts'
import { needsNextTickWarmUp, warmUpNextTick } from '../../lib/next-tick-warm-up.ts'
import { openTestDatabase, projectRoot, testConfig, typescriptLoader } from '../helper.ts'

const ErrorBody = Type.Object({ error: Type.String(), message: Type.String() })
const Item = Type.Object({ id: Type.Integer(), name: Type.String(), tags: Type.Array(Type.String()) })
const route = (schema: object, url: string, httpStatus: string) => ({ schema, method: 'GET', url, httpStatus })

t.test('equal response schemas share one serializer, in every scope with the same shared schemas', async (t) => {
  const factory = sharedSerializerFactory()
  const scope = factory({}, undefined)
  const other = factory({}, undefined)
  // Equal schemas as distinct objects (each route builds its own), on other routes and statuses.
  const a = scope(route({ ...ErrorBody }, '/a', '404'))
  const b = scope(route(structuredClone(ErrorBody), '/b', '400'))
  const c = other(route({ ...ErrorBody }, '/c', '401'))
  t.equal(a, b, 'the same function for the same schema on two routes')
  t.equal(a, c, 'and in another scope with the same shared schemas')
  const item = scope(route(Item, '/d', '200'))
  t.not(item, a, 'another schema gets its own serializer')
  const withShared = factory({ 'urn:x': { $id: 'urn:x', type: 'string' } }, undefined)(route({ ...ErrorBody }, '/e', '404'))
  t.not(withShared, a, 'a scope with other shared schemas compiles its own')
})

t.test('a shared serializer writes what Fastify\'s own compiler writes for the schema', async (t) => {
  const serialize = sharedSerializerFactory()({}, undefined)(route(Item, '/f', '200'))
  const direct = SerializerSelector()({}, undefined)(route(Item, '/f', '200'))
  for (const value of [{ id: 1, name: 'a "quoted" name', tags: ['x', 'y'] }, { id: 2, name: '', tags: [], extra: true }]) {
    t.equal(serialize(value), direct(value))
  }
})

t.test('equal request schemas share one validator, which still refuses what the strict check refuses', async (t) => {
  const factory = strictValidatorFactory()
  const options = { customOptions: { coerceTypes: 'array' as const, useDefaults: true } }
  const compile = factory({}, options)
  const Query = Type.Object({ limit: Type.Number({ minimum: 1 }), q: Type.Optional(Type.String()) }, { additionalProperties: false })
  const one = compile({ schema: Query, method: 'GET', url: '/a', httpPart: 'querystring' }) as ((data: unknown) => boolean) & { errors: unknown }
  const two = factory({}, options)({ schema: structuredClone(Query), method: 'GET', url: '/b', httpPart: 'querystring' })
  t.equal(one, two, 'one function for both routes')
  t.not(compile({ schema: Item, method: 'POST', url: '/c', httpPart: 'body' }), one, 'another schema gets its own')
  t.equal(one({ limit: '5' }), true, 'coerced and accepted')
  t.equal(one({ limit: '1e309' }), false, 'a non-finite number is refused')
  t.match(one.errors, [{ keyword: 'finite' }])
  t.equal(one({ limit: 0 }), false, 'a schema refusal')
  t.match(one.errors, [{ keyword: 'minimum' }])
  t.equal(one({ limit: 2 }), true)
  t.equal(one.errors, null, 'a pass leaves no refusal behind')
})

t.test('a schema compiles at its first use, or when the pending ones are compiled, and once', async (t) => {
  let compilations = 0
  let compilers = 0
  const counting = () => {
    const build = SerializerSelector()
    return (externalSchemas: never, options: never) => {
      compilers++
      const compile = build(externalSchemas, options)
      return (route: never) => { compilations++; return compile(route) }
    }
  }
  t.equal(typeof sharedSerializerFactory().compilePending, 'function', 'the app\'s serializers are deferred')
  t.equal(typeof strictValidatorFactory().compilePending, 'function', 'and its validators')
  const deferred = compileOnce(counting())
  const scope = deferred({} as never, undefined as never)
  const item = scope(route(Item, '/a', '200') as never) as (value: unknown) => string
  const error = scope(route(ErrorBody, '/b', '404') as never) as (value: unknown) => string
  const otherScope = deferred({} as never, undefined as never)
  t.equal(otherScope(route({ ...ErrorBody }, '/c', '400') as never), error, 'a scope with the same shared schemas shares the functions')
  t.equal(compilations, 0, 'nothing compiled while routes are registered')
  t.equal(compilers, 0, 'nor a compiler made')
  t.equal(item({ id: 1, name: 'x', tags: [] }), '{"id":1,"name":"x","tags":[]}', 'the first call compiles and answers')
  t.equal(compilations, 1)
  t.equal(deferred.compilePending(), 1, 'what no call needed is compiled when asked')
  t.equal(compilations, 2)
  t.equal(deferred.compilePending(), 0, 'and only once')
  t.equal(error({ error: 'e', message: 'm' }), '{"error":"e","message":"m"}')
  t.equal(compilations, 2, 'a compiled schema is not compiled again')
  t.equal(compilers, 1, 'one compiler for the scopes with the same shared schemas')
})

t.test('every route schema of the app compiles, after it is ready, without a request', async (t) => {
  const handle = await openTestDatabase(t)
  const config = testConfig()
  const options = serverOptions(config)
  const server = Fastify({ ...options, logger: false })
  await server.register(fp(app, { name: 'app' }), { config, db: handle })
  await server.ready()
  t.teardown(() => server.close())
  // With a delay, nothing is compiled before it has passed (the server waits a second after it listens,
  // so that the first readiness probe does not wait for the validators' Ajv instance).
  const started = performance.now()
  const compiling = compileSchemasInBackground(options, 200)
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal((await server.inject('/health')).statusCode, 200, 'requests are answered meanwhile')
  const compiled = await compiling
  t.ok(performance.now() - started >= 195, 'not before the delay')
  t.ok(compiled >= 40, `${compiled} distinct schemas compiled`)
  t.equal(await compileSchemasInBackground(options), 0, 'none is left')
  t.equal((await server.inject('/api/v1/stats')).statusCode, 200, 'the app answers with them')
})

t.test('the loader turns on Node\'s compile cache where Node has one, never under coverage', async (t) => {
  // What enabling the cache once more answers: already enabled when the loader did, enabled now when it
  // did not. The test runner may add NODE_V8_COVERAGE to the child's environment to cover it, so the
  // child says whether it had it.
  const probe = (env: NodeJS.ProcessEnv) => {
    const child = spawnSync(process.execPath, ['--import', typescriptLoader, '--input-type=module', '-e',
      "import m from 'node:module'; console.log(JSON.stringify({ answer: m.enableCompileCache?.() ?? null, covered: Boolean(process.env.NODE_V8_COVERAGE) }))"],
    { cwd: projectRoot, env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: '', ...env }, encoding: 'utf8' })
    t.equal(child.status, 0, child.stderr)
    return JSON.parse(child.stdout) as { answer: { status: number; directory?: string } | null; covered: boolean }
  }
  const statuses = (module as { constants?: { compileCacheStatus?: Record<string, number> } }).constants?.compileCacheStatus
  const plain = probe({})
  if (plain.answer === null || statuses === undefined) {
    t.equal(plain.answer, null, `Node ${process.version} has no compile cache`)
    return
  }
  const expected = plain.covered ? statuses.ENABLED : statuses.ALREADY_ENABLED
  t.equal(plain.answer.status, expected, `${plain.covered ? 'under coverage: not enabled by the loader' : 'enabled by the loader'} (${JSON.stringify(plain.answer)})`)
  const covered = probe({ NODE_V8_COVERAGE: join(t.testdir(), 'coverage') })
  t.ok(covered.covered)
  t.equal(covered.answer?.status, statuses.ENABLED, 'not enabled by the loader while V8 collects coverage')
})

t.test('the next-tick warm-up runs its ticks on Node 20 and 21 only, before it resolves', async (t) => {
  t.equal(needsNextTickWarmUp('20.19.0'), true)
  t.equal(needsNextTickWarmUp('21.7.3'), true)
  t.equal(needsNextTickWarmUp('22.0.0'), false)
  t.equal(needsNextTickWarmUp('24.11.1'), false)
  let ran = 0
  const count = () => { ran++ }
  // A tick scheduled before the warm-up runs before the warm-up resolves, as its own ticks do.
  process.nextTick(count)
  t.equal(await warmUpNextTick(50, '20.19.0'), 50, 'the ticks it scheduled')
  t.equal(ran, 1, 'the ticks have run when it resolves')
  t.equal(await warmUpNextTick(50, '24.0.0'), 0, 'nothing on Node 24')
})
