import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseEnv } from 'node:util'
import pg from 'pg'
import { runScript, runScriptIn, spawnScript, startServer } from '../support/run.ts'
import { buildTestApp, createPostgresDatabase, freePort, openTestDatabase, projectRoot, typescriptLoader } from '../helper.ts'
import { ConfigSchema, defaultBoxIndexMb, defaultPoolMax, loadConfig } from '../../lib/config.ts'
import { trustProxySetting } from '../../app.ts'
import { checkEnvSyntax, EnvFileError, loadEnvFile } from '../../lib/env-file.ts'
import { browserUrl, logFormat, loggerOptions, startupMessage } from '../../lib/logger.ts'
import { ByteProgress, formatBytes, formatDuration } from '../../commands/progress.ts'

const SCRIPTS = ['import', 'import-activity', 'seed-activity', 'generate-kml', 'user-role', 'apikey', 'migrate', 'bench']
const noStack = (text: string) => !/^\s+at /m.test(text)

// About forty Node processes, each loading the TypeScript sources: a busy machine needs more than the default.
t.setTimeout(300_000)

t.test('every script answers --help with its usage, options and defaults, exit 0', async (t) => {
  // user:role is asked with -h, the short form.
  const runs = await Promise.all(SCRIPTS.map((name) => runScript(`scripts/${name}.ts`, [name === 'user-role' ? '-h' : '--help'], {})))
  SCRIPTS.forEach((name, i) => {
    const run = runs[i]
    t.equal(run.code, 0, `${name} --help exits 0`, { stderr: run.stderr })
    t.match(run.stdout, /^usage: npm run [a-z:]+/, `${name} --help starts with its usage`)
    t.equal(run.stderr, '', `${name} --help writes nothing on stderr`)
  })
  t.match(runs[0].stdout, /--timezone <IANA zone>.*\(default: UTC\)/)
  t.match(runs[2].stdout, /--events N +number of events \(default: 20000\)/)
  t.match(runs[3].stdout, /--count N +number of placemarks \(default: 1000000\)/)
})

t.test('an unknown option is one line and exit 2, never a stack trace', async (t) => {
  const runs = await Promise.all(SCRIPTS.map((name) => runScript(`scripts/${name}.ts`, ['--frobnicate'], {})))
  SCRIPTS.forEach((name, i) => {
    const run = runs[i]
    t.equal(run.code, 2, `${name} exits 2`)
    t.equal(run.stderr, 'error: unknown option --frobnicate (see --help)\n', `${name}: one line`)
    t.equal(run.stdout, '')
  })
  const bad = await Promise.all([
    runScript('scripts/import.ts', [], {}),
    runScript('scripts/import.ts', ['a.kml', 'b.kml'], {}),
    runScript('scripts/generate-kml.ts', ['out.kml', '--count'], {}),
    runScript('scripts/import-activity.ts', ['x.ndjson', '--skip-invalid=yes'], {}),
    runScript('scripts/seed-activity.ts', ['--replace', '--append'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' })
  ])
  const expected = [
    /^error: missing <file\.kml\|file\.kmz>; usage: npm run import -- .* \(see --help\)$/,
    /^error: unexpected argument "b\.kml"; usage: npm run import -- /,
    /^error: option --count needs a value \(see --help\)$/,
    /^error: option --skip-invalid takes no value \(see --help\)$/,
    /^error: --replace and --append exclude each other \(see --help\)$/
  ]
  bad.forEach((run, i) => {
    t.equal(run.code, 2, `usage error ${i} exits 2`)
    t.match(run.stderr.trim(), expected[i])
    t.equal(run.stderr.trim().split('\n').length, 1, 'one line')
    t.ok(noStack(run.stderr), 'no stack trace')
  })
})

t.test('migrate --help migrates nothing', async (t) => {
  const url = await createPostgresDatabase(t)
  const help = await runScript('scripts/migrate.ts', ['--help'], { DATABASE_URL: url })
  t.equal(help.code, 0)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  const tables = async () => Number((await client.query("SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'")).rows[0].n)
  t.equal(await tables(), 0, 'the fresh database is left unmigrated')
  const run = await runScript('scripts/migrate.ts', [], { DATABASE_URL: url })
  t.equal(run.code, 0, run.stderr)
  t.ok(await tables() > 0, 'without --help it migrates')
})

t.test('seed:activity run twice refuses the second time without --replace or --append', async (t) => {
  const url = await createPostgresDatabase(t)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  const events = async () => Number((await client.query('SELECT count(*) AS n FROM activity_events')).rows[0].n)
  const seed = (extra: string[]) => runScript('scripts/seed-activity.ts', ['--guilds', '2', '--users', '20', '--events', '1000', ...extra], { DATABASE_URL: url })

  const first = await seed([])
  t.equal(first.code, 0, first.stderr)
  t.equal(await events(), 1000)
  const second = await seed([])
  t.equal(second.code, 1)
  t.equal(second.stderr.trim(), 'error: the database already holds 1000 activity events; nothing was seeded (use --replace to replace them or --append to add to them)')
  t.equal(await events(), 1000, 'nothing was added')
  const again = await seed(['--append'])
  t.equal(again.code, 0, again.stderr)
  t.equal(await events(), 1000, '--append of the same seed adds nothing: its events are duplicates')
  const appended = await seed(['--append', '--seed', '2'])
  t.equal(appended.code, 0, appended.stderr)
  t.match(appended.stdout, /added to the activity already there/)
  t.equal(await events(), 2000, '--append adds')
  const replaced = await seed(['--replace'])
  t.equal(replaced.code, 0, replaced.stderr)
  t.equal(await events(), 1000, '--replace replaces')
})

t.test('GET / leads to the docs and is not in the OpenAPI document', async (t) => {
  const handle = await openTestDatabase(t)
  const app = await buildTestApp(t, handle)
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: '/' })
    t.equal(res.statusCode, 302, `${method} /`)
    t.equal(res.headers.location, '/api/docs')
  }
  const spec = (await app.inject('/api/docs/json')).json()
  t.notOk(spec.paths['/'], 'hidden from the OpenAPI document')
})

const serverEnv = (url: string, port: number) => ({
  DATABASE_URL: url,
  PORT: String(port),
  HOST: '127.0.0.1',
  NODE_ENV: 'development',
  LOG_LEVEL: 'info',
  LOG_FORMAT: undefined,
  PUBLIC_URL: undefined,
  IDP_CLIENT_ID: undefined,
  SEED_SAMPLE_DATA: 'false',
  REDIS_URL: undefined
})

t.test('the start-up line names the docs and the sign-in at the address a browser should open', async (t) => {
  const url = await createPostgresDatabase(t)
  const port = await freePort()
  const { line } = await startServer(t, serverEnv(url, port), /serving on/)
  const entry = JSON.parse(line)
  t.equal(entry.level, 30, 'an info line, as JSON when stdout is not a terminal')
  const base = `http://localhost:${port}`
  t.equal(entry.msg, `serving on ${base} — docs ${base}/api/docs — sign in ${base}/api/auth/identity/login — dashboard ${base}/dashboard — map ${base}/map`)
  const res = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' })
  t.equal(res.status, 302)
  t.equal(res.headers.get('location'), '/api/docs')

  const port2 = await freePort()
  const pretty = await startServer(t, { ...serverEnv(url, port2), LOG_FORMAT: 'pretty', PUBLIC_URL: 'https://maps.example/' }, /serving on/)
  t.throws(() => JSON.parse(pretty.line), 'LOG_FORMAT=pretty: readable lines')
  t.match(pretty.line, /INFO.*serving on https:\/\/maps\.example — docs https:\/\/maps\.example\/api\/docs — sign in https:\/\/maps\.example\/api\/auth\/identity\/login/)
})

t.test('npm start\'s loader: Node\'s own type stripping where Node has it (24), tsx otherwise (20); the server serves', async (t) => {
  const url = await createPostgresDatabase(t)
  const port = await freePort()
  // Outside the coverage (neither V8's nor tap's own, which every process started under tap records
  // through the inspector unless told not to), as `npm start` runs it: the loader's choice, and Node's
  // compile cache, which the loader leaves off under coverage.
  await startServer(t, { ...serverEnv(url, port), NODE_V8_COVERAGE: undefined, _TAPJS_PROCESSINFO_COVERAGE_: '0' }, /serving on/, projectRoot, typescriptLoader)
  const res = await fetch(`http://127.0.0.1:${port}/health`)
  t.equal(res.status, 200)
  t.equal((await res.json() as { status: string }).status, 'ok')
})

t.test('.env: read from the working directory, the environment wins, a bad line is one line', async (t) => {
  const url = await createPostgresDatabase(t)
  const dir = t.testdir({})
  const unset = { DATABASE_URL: undefined, PGLITE_DIR: undefined }

  writeFileSync(join(dir, '.env'), `# the test database\nDATABASE_URL=${url}\n`)
  const fromFile = await runScriptIn(dir, 'scripts/migrate.ts', [], unset)
  t.equal(fromFile.code, 0, fromFile.stderr)
  t.equal(fromFile.stderr.trim(), 'database migrated (postgres)', 'DATABASE_URL came from .env')

  writeFileSync(join(dir, '.env'), 'DATABASE_URL=postgres://nobody@127.0.0.1:1/none\n')
  const fromEnv = await runScriptIn(dir, 'scripts/migrate.ts', [], { ...unset, DATABASE_URL: url })
  t.equal(fromEnv.code, 0, 'the environment wins over .env')
  const fileOnly = await runScriptIn(dir, 'scripts/migrate.ts', [], unset)
  t.equal(fileOnly.code, 1)
  t.match(fileOnly.stderr, /^error: cannot open the database at DATABASE_URL/, 'and .env is read when the environment does not say')

  writeFileSync(join(dir, '.env'), `DATABASE_URL=${url}\nthis line is not an assignment\n`)
  const broken = await runScriptIn(dir, 'scripts/migrate.ts', [], unset)
  t.same([broken.code, broken.stderr], [1, 'error: .env line 2: expected NAME=value\n'], 'a syntax error: one line, exit 1')
  const help = await runScriptIn(dir, 'scripts/migrate.ts', ['--help'], unset)
  t.equal(help.code, 0, '--help answers even with a broken .env')
  const server = await spawnScript('server.ts', [], unset, dir)
  t.same([server.code, server.stderr], [1, 'error: .env line 2: expected NAME=value\n'], 'the server says the same')

  // The server takes its port from .env; the environment's LOG_LEVEL wins over the file's.
  const port = await freePort()
  writeFileSync(join(dir, '.env'), `PORT=${port}\nLOG_LEVEL=silent\nSEED_SAMPLE_DATA=false\n`)
  const started = await startServer(t, { ...serverEnv(url, 0), PORT: undefined, LOG_LEVEL: 'info' }, /serving on/, dir)
  t.match(JSON.parse(started.line).msg, `serving on http://localhost:${port} `)
})

t.test('.env syntax and precedence (in process)', async (t) => {
  t.doesNotThrow(() => checkEnvSyntax('# comment\n\nA=1\nexport B = two words\nC="multi\nline"\nD=\'x # y\'\nE=\n'))
  t.throws(() => checkEnvSyntax('A=1\nB\n'), new EnvFileError('.env line 2: expected NAME=value'))
  t.throws(() => checkEnvSyntax('A=1\n2B=x\n'), new EnvFileError('.env line 2: the name before "=" is not a valid variable name'))
  t.throws(() => checkEnvSyntax('A="open\nB=2\n'), new EnvFileError('.env line 1: the value of A opens a " quote that is never closed'))
  t.throws(() => checkEnvSyntax('SECRET value-without-equals', 'x/.env'), /^x\/\.env line 1: expected NAME=value$/)
  t.notMatch(String((() => { try { checkEnvSyntax('SECRET hunter2') } catch (e) { return e } })()), /hunter2/, 'the line itself is never repeated')

  const dir = t.testdir({ '.env': 'A=from-file\nB="quoted # kept"\nC=file\n' })
  const env: NodeJS.ProcessEnv = { C: 'from-env' }
  t.equal(loadEnvFile(join(dir, '.env'), env), join(dir, '.env'))
  t.same(env, { A: 'from-file', B: 'quoted # kept', C: 'from-env' }, 'the file fills in; the environment wins')
  t.equal(loadEnvFile(join(dir, 'absent.env'), env), null, 'no file, nothing to do')
})

t.test('.env.example lists every setting with its default (in process)', async (t) => {
  const text = readFileSync(join(projectRoot, '.env.example'), 'utf8')
  const uncommented = text.split('\n').map((line) => line.replace(/^# (?=[A-Z_]+=)/, '')).join('\n')
  checkEnvSyntax(uncommented, '.env.example')
  const example = parseEnv(uncommented) as Record<string, string>
  for (const key of Object.keys(ConfigSchema.properties)) t.ok(key in example, `${key} is listed`)
  for (const key of Object.keys(example)) t.ok(key in ConfigSchema.properties || key === 'BENCH_DATABASE_URL', `${key} is a setting`)
  // Uncommented as it stands, the example is the defaults (but for the example connection URLs).
  const { DATABASE_URL, REDIS_URL, BENCH_DATABASE_URL, TRUST_PROXY, DB_POOL_MAX, BBOX_INDEX_MB, ...rest } = example
  t.ok(DATABASE_URL && REDIS_URL && BENCH_DATABASE_URL)
  t.same(loadConfig(rest), loadConfig({}))
  // The pool's default depends on the machine's cores; the example shows it for 2.
  t.equal(Number(DB_POOL_MAX), defaultPoolMax(2))
  // The box index's default depends on the memory; the example shows it for 4 GiB.
  t.equal(Number(BBOX_INDEX_MB), defaultBoxIndexMb(4 * 1024 ** 3))
  t.equal(trustProxySetting(TRUST_PROXY), trustProxySetting(undefined), 'TRUST_PROXY=false is the default')
})

t.test('log format, start-up line and progress (in process)', async (t) => {
  t.equal(logFormat({}, true), 'pretty', 'a terminal outside production: readable lines')
  t.equal(logFormat({ NODE_ENV: 'test' }, true), 'pretty')
  t.equal(logFormat({ NODE_ENV: 'production' }, true), 'json', 'production: JSON')
  t.equal(logFormat({}, false), 'json', 'not a terminal: JSON')
  t.equal(logFormat({ LOG_FORMAT: 'pretty', NODE_ENV: 'production' }, false), 'pretty', 'LOG_FORMAT decides')
  t.equal(logFormat({ LOG_FORMAT: 'json' }, true), 'json')
  t.throws(() => loadConfig({ LOG_FORMAT: 'fancy' }), /LOG_FORMAT/)
  const json = loggerOptions('info', 'json') as Record<string, unknown>
  const pretty = loggerOptions('info', 'pretty') as Record<string, unknown>
  t.notOk('stream' in json)
  t.ok(pretty.stream, 'pretty lines through pino-pretty')
  t.same(pretty.redact, json.redact, 'the same redaction either way')
  t.same(Object.keys(pretty.serializers as object), Object.keys(json.serializers as object))

  t.equal(browserUrl(undefined, { address: '0.0.0.0', port: 8080, family: 'IPv4' }), 'http://localhost:8080')
  t.equal(browserUrl(undefined, { address: '::', port: 81, family: 'IPv6' }), 'http://localhost:81')
  t.equal(browserUrl(undefined, { address: '127.0.0.1', port: 82, family: 'IPv4' }), 'http://localhost:82')
  t.equal(browserUrl(undefined, { address: '192.168.1.5', port: 83, family: 'IPv4' }), 'http://192.168.1.5:83')
  t.equal(browserUrl(undefined, { address: 'fd00::5', port: 84, family: 'IPv6' }), 'http://[fd00::5]:84')
  t.equal(browserUrl('https://maps.example/base/', { address: '0.0.0.0', port: 8080, family: 'IPv4' }), 'https://maps.example/base')
  t.equal(startupMessage('http://h:1', false), 'serving on http://h:1 — docs http://h:1/api/docs', 'no sign-in link without the development provider')

  t.equal(formatBytes(512), '512 B')
  t.equal(formatBytes(1536), '1.5 kB')
  t.equal(formatBytes(5 * 1024 * 1024), '5.0 MB')
  t.equal(formatDuration(75), '1 min 15 s')
  let written = ''
  const terminal = { isTTY: true, write: (s: string) => { written += s } }
  const progress = new ByteProgress('map.kml', 4 * 1024 * 1024, 'placemarks', terminal, 0)
  async function * chunks () { yield Buffer.alloc(1024 * 1024); yield Buffer.alloc(1024 * 1024) }
  let seen = 0
  for await (const chunk of progress.count(chunks())) {
    seen += chunk.length
    if (seen === 2 * 1024 * 1024) {
      progress.setItems(1234)
      t.match(progress.line(performance.now() + 10_000), /^2\.0 MB of 4\.0 MB \(50%\), 1,234 placemarks, about \d+ s left$/, 'an estimate after a second')
    }
  }
  // eslint-disable-next-line no-control-regex -- the terminal's escape sequences are the point
  t.match(written, /\r\x1b\[2K1\.0 MB of 4\.0 MB \(25%\), 0 placemarks/, 'bytes read against the size, in place')
  t.match(written, /2\.0 MB of 4\.0 MB \(50%\), 1,234 placemarks/)
  t.match(written, /read all 2\.0 MB; finishing…/, 'reading done, the import finishing')
  progress.done()
  // eslint-disable-next-line no-control-regex -- the terminal's escape sequences are the point
  t.match(written, /\r\x1b\[2Kread 2\.0 MB of map\.kml in [\d.]+ s \(1,234 placemarks, .*\/s\)\n$/, 'the line is replaced by the summary')

  let plain = ''
  const pipe = { isTTY: false, write: (s: string) => { plain += s } }
  const quiet = new ByteProgress('map.kml', 2048, 'placemarks', pipe, 0)
  for await (const chunk of quiet.count(chunks())) t.ok(chunk.length)
  quiet.done()
  t.equal(plain.split('\n').length, 2, 'not a terminal: one summary line only')
  t.match(plain, /^read 2\.0 MB of map\.kml in /)
})

t.test('the server: --help prints its usage, an argument is refused (process)', async (t) => {
  const help = await spawnScript('server.ts', ['--help'], {})
  t.equal(help.code, 0)
  t.match(help.stdout, /^usage: npm start/)
  t.match(help.stdout, /DATABASE_URL/)
  t.equal(help.stderr, '')
  const wrong = await spawnScript('server.ts', ['--port', '9000'], {})
  t.equal(wrong.code, 2)
  t.match(wrong.stderr, /the server takes no arguments \(got "--port"\).*see --help/)
  t.equal(wrong.stdout, '')
})
