/**
 * A property test over the whole route table, driven by the OpenAPI document the service publishes: every
 * operation gets missing, wrong, extra and hostile fields, malformed and deeply nested JSON, odd content types,
 * hostile path and query values, and every kind of token. Whatever arrives, the answer is never a 5xx other
 * than a documented `not_configured`, every error is problem+json with a documented code and status, and an
 * anonymous caller of a guarded route learns nothing but 401.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { errorCodes } from '../../src/errors.ts'
import { BASE, UNLIMITED_BUDGETS } from '../helpers.ts'
import { callers, type Callers } from './callers.ts'

const RUNS = Number(process.env.FUZZ_RUNS ?? 5000)
// A failing run prints its seed; FUZZ_SEED replays it.
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
}

interface Operation {
  method: string
  path: string
  guarded: boolean
  pathParams: string[]
  query: Record<string, JsonSchema>
  body?: JsonSchema
}

const hostileStrings = fc.constantFrom(
  '',
  ' ',
  '../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  '%00',
  '\u0000',
  '\r\nSet-Cookie: a=b',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a hostile input sent as it is
  '${jndi:ldap://127.0.0.1/a}',
  'http://127.0.0.1:1/',
  'http://169.254.169.254/latest/meta-data/',
  'file:///etc/passwd',
  '__proto__',
  'constructor',
  '😀'.repeat(50),
  '\ud800',
  'a'.repeat(5000),
  '-1',
  '1e309',
  'NaN',
  'null',
)

const anyString = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), hostileStrings)
// Objects whose own keys shadow what string conversion calls: a wrong-typed field of this shape once crashed validation.
const shadowing = fc.dictionary(fc.constantFrom('toString', 'valueOf', 'toJSON', 'constructor'), fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 2 })
const anyNumber = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 2 ** 53, -(2 ** 31), 1e308))

/** Values of a schema's shape, often valid, often off by a field or a type: the interesting part of the input space. */
function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 5) return fc.jsonValue({ maxDepth: 2 })
  if (schema.const !== undefined) return fc.oneof(fc.constant(schema.const), anyString)
  if (schema.enum) return fc.oneof(fc.constantFrom(...schema.enum), anyString)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => fromSchema(s, depth + 1)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'object': {
      const properties = Object.entries(schema.properties ?? {})
      const shape = Object.fromEntries(properties.map(([name, s]) => [name, fromSchema(s, depth + 1)]))
      const known = fc.record(shape, { requiredKeys: [] })
      const extra = fc.dictionary(
        fc.oneof(
          fc.string({ maxLength: 12 }),
          fc.constantFrom('__proto__', 'constructor', 'toString', 'valueOf', 'toJSON', 'role', 'orgId', 'plan', 'isAdmin'),
        ),
        fc.jsonValue({ maxDepth: 2 }),
        { maxKeys: 3 },
      )
      return fc.oneof(
        { weight: 4, arbitrary: known },
        { weight: 1, arbitrary: fc.tuple(known, extra).map(([a, b]) => ({ ...b, ...(a as object) })) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      )
    }
    case 'array':
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 }) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
      )
    case 'string':
      return fc.oneof({ weight: 3, arbitrary: anyString }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }, { weight: 1, arbitrary: shadowing })
    case 'integer':
    case 'number':
      return fc.oneof({ weight: 3, arbitrary: anyNumber }, { weight: 1, arbitrary: anyString })
    case 'boolean':
      return fc.oneof(fc.boolean(), anyString, fc.constant(null))
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

const nested = fc.tuple(fc.integer({ min: 50, max: 20_000 }), fc.constantFrom('[', '{"a":')).map(([depth, open]) => {
  const close = open === '[' ? ']' : '}'
  return `${open.repeat(depth)}1${close.repeat(depth)}`
})

/** A body as text: JSON of the schema's shape, arbitrary JSON, deep nesting, or bytes that are not JSON at all. */
function bodyText(schema: JsonSchema | undefined): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fromSchema(schema).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: nested },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '{"a":}', '[1,]', '\u0000', '{"a":"\\ud800"}', '1'.repeat(400), `"${'x'.repeat(300_000)}"`) },
  )
}

const contentTypes = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/merge-patch+json',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  undefined,
)

let c: Callers
let operations: Operation[]
const tokenKinds = [
  'none',
  'garbage',
  'basic scheme',
  'expired',
  'signed with another key',
  'alg none',
  'viewer',
  'member',
  'billing',
  'owner',
  'enterpriseOwner',
] as const
const anonymousKinds = new Set<string>(['none', 'garbage', 'basic scheme', 'expired', 'signed with another key', 'alg none'])

beforeAll(async () => {
  // Budgets high enough that the fuzzer reaches validation and handlers rather than only 429s.
  c = await callers(UNLIMITED_BUDGETS)
  const doc = await (await c.t.request('/swagger/json')).json()
  operations = []
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>))
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
      // The WebSocket upgrade: a plain request is answered 426 whoever sends it (test/agents covers the handshake).
      if (op.responses?.['101']) continue
      const parameters: { in: string; name: string; schema: JsonSchema }[] = op.parameters ?? []
      operations.push({
        method: method.toUpperCase(),
        path,
        guarded:
          Array.isArray(op.security) &&
          op.security.some((s: object) => Object.keys(s).length > 0) &&
          !op.security.some((s: object) => Object.keys(s).length === 0),
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema])),
        body: op.requestBody?.content?.['application/json']?.schema,
      })
    }
})
afterAll(() => c.close())

test(`${RUNS} requests across every operation: no 5xx but not_configured, every error problem+json with a documented code, anonymous callers of guarded routes only 401`, async () => {
  expect(operations.length).toBeGreaterThan(30)
  const counts = { requests: 0, serverErrors: 0, notProblemJson: 0, undocumented: 0, anonymousNot401: 0, byStatus: {} as Record<number, number> }
  const failures: string[] = []
  const request = fc.integer({ min: 0, max: operations.length - 1 }).chain((i) => {
    const op = operations[i]!
    return fc.record({
      op: fc.constant(op),
      token: fc.constantFrom(...tokenKinds),
      params: fc.array(anyString, { minLength: op.pathParams.length, maxLength: op.pathParams.length }),
      query: fc.dictionary(fc.oneof(fc.constantFrom(...Object.keys(op.query), 'x'), fc.string({ maxLength: 8 })), anyString.map(String), { maxKeys: 3 }),
      body: bodyText(op.body),
      contentType: contentTypes,
      method: fc.oneof({ weight: 9, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'PATCH', 'DELETE', 'OPTIONS') }),
    })
  })

  await fc
    .assert(
      fc.asyncProperty(request, async ({ op, token, params, query, body, contentType, method }) => {
        let path = op.path
        for (const [k, name] of op.pathParams.entries()) path = path.replace(`{${name}}`, encodeURIComponent(params[k]!.toWellFormed()) || 'x')
        const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k.toWellFormed(), v.toWellFormed()])).toString()
        // Real clients always send Host; the MCP transport refuses a request without one.
        const headers: Record<string, string> = { host: 'localhost', ...(contentType ? { 'content-type': contentType } : {}) }
        if (anonymousKinds.has(token)) Object.assign(headers, c.anonymous[token])
        else headers.authorization = `Bearer ${c.tokens[token as keyof Callers['tokens']]}`
        const withBody = method !== 'GET' && method !== 'HEAD'
        const res = await c.t.app.handle(new Request(`${BASE}${path}${search ? `?${search}` : ''}`, { method, headers, body: withBody ? body : undefined }))
        counts.requests++
        counts.byStatus[res.status] = (counts.byStatus[res.status] ?? 0) + 1
        const text = await res.text()
        const label = `${method} ${path} token=${token} type=${contentType} body=${body.slice(0, 80)}`
        if (res.status >= 400) {
          let problem: { code?: string; status?: number } = {}
          if (res.headers.get('content-type') !== 'application/problem+json') {
            counts.notProblemJson++
            failures.push(`not problem+json ${res.status}: ${label}`)
          } else problem = JSON.parse(text)
          const documented = problem.code && problem.code in errorCodes && errorCodes[problem.code as keyof typeof errorCodes].status === res.status
          if (!documented) {
            counts.undocumented++
            failures.push(`undocumented ${res.status} ${problem.code}: ${label}`)
          }
          if (res.status >= 500 && problem.code !== 'not_configured') {
            counts.serverErrors++
            failures.push(`${res.status} ${problem.code}: ${method} ${path}?${search} token=${token} type=${contentType} body=${body.slice(0, 4000)}`)
          }
        }
        // A `.` or `..` parameter is resolved away by the URL and lands on another route: only the intended one counts.
        const sameRoute = new URL(BASE + path).pathname === path
        if (op.guarded && sameRoute && method === op.method && anonymousKinds.has(token) && res.status !== 401) {
          counts.anonymousNot401++
          failures.push(`anonymous ${res.status}: ${label}`)
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: false, interruptAfterTimeLimit: 240_000 },
    )
    .catch((err) => failures.push(`property threw: ${String(err).slice(0, 1500)}`))
  console.log(`fuzz (seed ${SEED}): ${JSON.stringify(counts)}`)
  if (counts.serverErrors) console.log(c.t.logs.filter((line) => line.level === 'error').slice(0, 5))
  expect(failures.slice(0, 20)).toEqual([])
  expect(counts.requests).toBeGreaterThanOrEqual(Math.min(RUNS, 1000))
}, 300_000)
