/**
 * The OpenAPI document as the service really behaves: @elysiajs/openapi's output, completed from the route table.
 *
 * The generator sees each route's schemas, not what runs around them, so this adds what the core does for every
 * route (src/request-pipeline.ts, src/guards.ts):
 * - request bodies are JSON (a route that names more parsers, such as `urlencoded`, takes those too);
 * - a body sent with any method but GET is read, so can be refused with 400, 413 and 415; a body, params or
 *   query the route validates with 422; every request head with 414 and 431;
 * - a `{ auth }` route answers 401 (and 403 for a scope), a `{ plan }` route 403, a `{ rateLimit }` route 429;
 * - errors are application/problem+json with the one `Problem` schema;
 * - a route's own `detail.responses` (streams, pages) are kept beside its schemas; no-content answers have none;
 * - query and path values Elysia coerces from text are described as what they carry (`integer`, `boolean`);
 * - a route that needs no token says so with `security: []`.
 * Pure: the same input gives the same document.
 */
import { OptionalKind, type TSchema } from '@sinclair/typebox'
import { TAKES_MULTIPART } from '../../src/body.ts'
import { problem } from '../../src/schemas.ts'
import { MAX_HEADER_BYTES, MAX_URL_BYTES } from '../../src/request-pipeline.ts'

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document walked as plain JSON, any node of any shape
type Json = Record<string, any>

/** What the completion reads of one route (a subset of Elysia's route table). */
export interface RouteEntry {
  method: string
  path: string
  hooks?: {
    body?: unknown
    params?: unknown
    query?: unknown
    parse?: unknown
    detail?: { hide?: boolean; responses?: Record<string, Json>; [key: string]: unknown }
  }
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' }
const problemContent = { 'application/problem+json': { schema: PROBLEM_REF } }
const problemJson = JSON.stringify(problem)
const rateLimitHeaders = {
  RateLimit: { description: 'The budget left: `limit=…, remaining=…, reset=…` (IETF RateLimit header fields)', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'The policies that apply, with their windows', schema: { type: 'string' } },
}

/** The answers the core gives for every route that takes them, named once and referenced. */
export const commonResponses: Record<string, Json> = {
  BadRequest: { description: 'The body is not JSON (`invalid_json`) or is nested deeper than the service reads (`nesting_too_deep`)', content: problemContent },
  Unauthenticated: {
    description: 'No bearer token, or one that is malformed, expired or revoked (`unauthenticated`, `invalid_token`)',
    headers: { 'WWW-Authenticate': { description: 'The bearer challenge', schema: { type: 'string' } } },
    content: problemContent,
  },
  PayloadTooLarge: { description: 'The body is larger than BODY_LIMIT_BYTES (`payload_too_large`)', content: problemContent },
  UnsupportedMediaType: { description: 'The body is not of a media type this route takes (`unsupported_media_type`)', content: problemContent },
  UriTooLong: { description: `The request target is longer than ${MAX_URL_BYTES} bytes (\`uri_too_long\`)`, content: problemContent },
  HeadersTooLarge: { description: `The request line and headers exceed ${MAX_HEADER_BYTES} bytes (\`headers_too_large\`)`, content: problemContent },
  ValidationFailed: {
    description: 'The body, query or path did not match the schema (`validation_failed`); `errors` names each field',
    content: problemContent,
  },
  RateLimited: {
    description: 'A rate limit is spent (`rate_limited`); retry after Retry-After seconds',
    headers: { ...rateLimitHeaders, 'Retry-After': { description: 'Seconds until the budget refills', schema: { type: 'integer' } } },
    content: problemContent,
  },
}

const ref = (name: keyof typeof commonResponses) => ({ $ref: `#/components/responses/${name}` })

/** HTTP reason phrases for the statuses the service answers, for problem responses declared without a description. */
const REASONS: Record<string, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable content',
  426: 'Upgrade required',
  429: 'Too many requests',
  500: 'Internal server error',
  502: 'Upstream failed',
  503: 'Service unavailable',
  504: 'Upstream timed out',
}

/** Completes `generated` (the generator's document) from `routes`; `generated` is left as it was. */
export function completeDocument(generated: Json, routes: readonly RouteEntry[]): Json {
  const document: Json = structuredClone(generated)
  const byOperation = new Map(routes.map((route) => [`${route.method.toLowerCase()} ${route.path.replace(/:([^/]+)/g, '{$1}')}`, route]))
  for (const [path, item] of Object.entries(document.paths ?? {}) as [string, Json][])
    for (const [method, operation] of Object.entries(item) as [string, Json][]) {
      const route = byOperation.get(`${method} ${path}`)
      if (route) completeOperation(operation, route)
    }
  dropNullable(document.paths)
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, Problem: plain(problem) },
    responses: { ...commonResponses, ...document.components?.responses },
  }
  return document
}

function completeOperation(operation: Json, route: RouteEntry): void {
  const hooks = route.hooks ?? {}
  const detail = hooks.detail ?? {}
  const responses: Json = (operation.responses ??= {})
  for (const [status, response] of Object.entries(responses)) responses[status] = withoutVoidContent(response)
  // The generator drops a route's own `detail.responses` when the route also has response schemas. Both are kept
  // (JSON, or a stream by Accept), but a declared media type replaces the generator's guess for a `t.String()`.
  for (const [status, declared] of Object.entries(detail.responses ?? {})) {
    const generated = responses[status]
    if (!generated) {
      responses[status] = declared
      continue
    }
    const { 'text/plain': guessed, ...content } = generated.content ?? {}
    if (guessed && !declared.content) content['text/plain'] = guessed
    const merged = { ...content, ...declared.content }
    responses[status] = { ...generated, ...declared, ...(Object.keys(merged).length > 0 ? { content: merged } : {}) }
  }
  for (const [status, response] of Object.entries(responses)) responses[status] = asProblem(status, response)

  if (hooks.body !== undefined)
    operation.requestBody = requestBody(hooks.body as TSchema, operation.requestBody, takesMultipart(hooks.parse) ? 'multipart' : takesForm(hooks.parse))
  // A body sent with any method but GET and HEAD is read (and can be refused), whether or not the route wants one.
  if (hooks.body !== undefined || !['GET', 'HEAD'].includes(route.method)) {
    responses['400'] ??= ref('BadRequest')
    responses['413'] ??= ref('PayloadTooLarge')
    responses['415'] ??= ref('UnsupportedMediaType')
  }
  if (hooks.body !== undefined || hooks.params !== undefined || hooks.query !== undefined) responses['422'] ??= ref('ValidationFailed')
  const scope = detail['x-required-scope'] as string | undefined
  if (scope !== undefined) responses['401'] = ref('Unauthenticated')
  const refusals = [
    ...(scope !== undefined && scope !== 'any' ? [`the token lacks the \`${scope}\` scope (\`insufficient_scope\`)`] : []),
    ...(detail['x-required-plan'] ? [`the organisation is not on the ${detail['x-required-plan']} plan (\`plan_required\`)`] : []),
  ]
  if (refusals.length > 0 && isGeneric('403', responses['403']))
    responses['403'] = { description: `${capitalise(refusals.join(', or '))}; the problem's \`code\` says which`, content: problemContent }
  if (detail['x-rate-limit'] !== undefined && isGeneric('429', responses['429'])) responses['429'] = ref('RateLimited')

  // Every route's head is measured (src/request-pipeline.ts).
  responses['414'] ??= ref('UriTooLong')
  responses['431'] ??= ref('HeadersTooLarge')

  for (const parameter of operation.parameters ?? []) if (parameter.schema) parameter.schema = wireValue(parameter.schema)
  // No token needed is stated, not left to a root default.
  operation.security ??= []
}

/** The generator writes `t.Void()` and friends as `{ type: 'void' }` in place of the media types: no content. */
function withoutVoidContent(response: Json): Json {
  if (!response?.content || typeof response.content.type !== 'string') return response
  const { content: _none, ...rest } = response
  return rest
}

/** A response with the bare problem schema, as it goes out: application/problem+json with the `Problem` schema. */
function asProblem(status: string, response: Json): Json {
  const json = response?.content?.['application/json']
  if (!json || JSON.stringify(json.schema) !== problemJson) return response
  const generic = response.description === problem.description || /^Response for status/.test(response.description)
  return { ...response, description: generic ? genericProblem(status) : response.description, content: problemContent }
}

/** Only the media types the request pipeline parses, with the route's body schema. */
function requestBody(body: TSchema, generated: Json | undefined, form: boolean | 'multipart'): Json {
  const schema = Object.values((generated?.content ?? {}) as Record<string, Json>)[0]?.schema ?? plain(body)
  // An upload route (`multipartBody`) takes multipart/form-data only; its file parts are binary strings.
  const content: Json = form === 'multipart' ? { 'multipart/form-data': { schema: binaryFiles(schema) } } : { 'application/json': { schema } }
  if (form === true) content['application/x-www-form-urlencoded'] = { schema }
  return { ...(generated?.description ? { description: generated.description } : {}), required: !(OptionalKind in body), content }
}

/** A route whose parser is `multipartBody` takes multipart/form-data (src/body.ts). */
function takesMultipart(parse: unknown): boolean {
  const listed = Array.isArray(parse) ? parse : parse ? [parse] : []
  return listed.some((p) => {
    const fn = (p as { fn?: unknown })?.fn ?? p
    return typeof fn === 'function' && TAKES_MULTIPART in fn
  })
}

/** Each file property as OpenAPI 3.0 writes a file in multipart/form-data: a string of format binary. */
function binaryFiles(schema: Json): Json {
  const properties = Object.fromEntries(
    Object.entries((schema.properties ?? {}) as Record<string, Json>).map(([name, property]) => {
      const isFile = property.format === 'binary' || property.type === 'File' || property.type === 'file' || property.anyOf !== undefined
      // Elysia's own file keywords (maxSize, minSize, extension) are not OpenAPI: the route's description states the limits.
      const { anyOf: _any, default: _default, maxSize: _max, minSize: _min, extension: _extension, ...rest } = property
      return [name, isFile ? { ...rest, type: 'string', format: 'binary' } : property]
    }),
  )
  return { ...schema, properties }
}

/** A route that names the `urlencoded` parser also takes HTML forms (src/request-pipeline.ts). */
function takesForm(parse: unknown): boolean {
  const listed = Array.isArray(parse) ? parse : parse ? [parse] : []
  return listed.some((p) => p === 'urlencoded' || (p as { fn?: unknown })?.fn === 'urlencoded')
}

/**
 * Elysia coerces query and path values from text: `t.Integer` there is `string (format integer) | integer`, and
 * `t.Numeric`, `t.BooleanString` alike. On the wire a parameter is always text, so its schema is the value's own.
 */
export function wireValue(schema: Json): Json {
  const options: Json[] | undefined = schema.anyOf
  if (options?.length !== 2) return schema
  const text = options.find((o) => o.type === 'string' && ['integer', 'numeric', 'boolean'].includes(o.format))
  const value = options.find((o) => o !== text)
  if (!text || !value || !['integer', 'number', 'boolean'].includes(value.type)) return schema
  const { anyOf: _coerced, ...rest } = schema
  return { ...rest, ...value }
}

const genericProblem = (status: string) => `${REASONS[status] ?? 'Error'}: a problem body whose \`code\` says which`

/** A 403 or 429 the route declared with the bare problem schema, to be replaced by what the guard says. */
function isGeneric(status: string, response: Json | undefined): boolean {
  return response === undefined || response.description === genericProblem(status)
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

/**
 * Elysia's `t.Nullable` also writes OpenAPI 3.0's `nullable: true`; in 3.1 a schema admits null by its type
 * (`type: [..., 'null']` or a `null` branch), so the 3.0 keyword is dropped where null is already admitted.
 */
function dropNullable(node: unknown): void {
  if (!node || typeof node !== 'object') return
  if (Array.isArray(node)) {
    for (const item of node) dropNullable(item)
    return
  }
  const schema = node as Json
  const admitsNull = (Array.isArray(schema.type) && schema.type.includes('null')) || schema.anyOf?.some((o: Json) => o?.type === 'null')
  if (schema.nullable === true && admitsNull) delete schema.nullable
  for (const value of Object.values(schema)) dropNullable(value)
}

/** A TypeBox schema as plain JSON Schema (its symbol-keyed markers dropped). */
const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema))
