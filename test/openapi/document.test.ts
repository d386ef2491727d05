import { afterAll, describe, expect, test } from 'bun:test'
import { operationsOf, resolved, served } from './support.ts'

const { t, openapi: doc } = await served()
afterAll(() => t.close())
const operations = operationsOf(doc)
const operation = (method: string, path: string) => doc.paths[path]?.[method]
const statuses = (op: Record<string, any>) => Object.keys(op.responses)
type RouteHooks = { detail?: Record<string, unknown>; body?: unknown; params?: unknown; query?: unknown }
const hooksOf = (route: (typeof t.app.routes)[number]) => (route.hooks ?? {}) as RouteHooks
const documentedRoutes = t.app.routes.filter(
  (r) => r.method !== 'WS' && r.method !== 'OPTIONS' && hooksOf(r).detail?.hide !== true && !r.path.startsWith('/swagger'),
)
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}')

describe('the OpenAPI document', () => {
  test('is OpenAPI 3.1 with the service title, a server and the bearer scheme', () => {
    expect(doc.openapi).toStartWith('3.1.')
    expect(doc.info.title).toContain('AI development platform')
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })])
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  test('lists every HTTP route of the app with a success response', () => {
    expect(documentedRoutes.length).toBeGreaterThan(30)
    for (const route of documentedRoutes) {
      const op = operation(route.method.toLowerCase(), openApiPath(route.path))
      expect(op, `${route.method} ${route.path}`).toBeDefined()
      expect(
        statuses(op).some((s) => /^(2\d\d|101|30[123])$/.test(s)),
        `${route.method} ${route.path} success`,
      ).toBe(true)
    }
  })

  test('request bodies are JSON only, HTML forms only where the route parses them, and multipart only for uploads', () => {
    const bodies = operations.filter((o) => o.operation.requestBody)
    expect(bodies.length).toBeGreaterThan(10)
    for (const { method, path, operation: op } of bodies) {
      const types = Object.keys(op.requestBody.content)
      // POST /api/files takes one file part, as multipart/form-data only (its parser counts the bytes as they arrive).
      if (method === 'post' && path === '/api/files') {
        expect(types).toEqual(['multipart/form-data'])
        expect(op.requestBody.content['multipart/form-data'].schema.properties.file.format).toBe('binary')
        continue
      }
      // The setup page and the password reset page post forms.
      const forms = path === '/setup' || path === '/auth/password/reset'
      const expected = forms ? ['application/json', 'application/x-www-form-urlencoded'] : ['application/json']
      expect({ route: `${method} ${path}`, types }).toEqual({ route: `${method} ${path}`, types: expected })
      expect(op.requestBody.content['application/json'].schema, `${method} ${path}`).toBeObject()
    }
    expect(operation('post', '/api/integrations/{provider}/auth').requestBody.required).toBe(false)
    expect(operation('post', '/api/chat').requestBody.required).toBe(true)
  })

  test('integers are integers: no schema offers a numeric string in place of a number', () => {
    const coerced: string[] = []
    const visit = (node: unknown, at: string) => {
      if (!node || typeof node !== 'object') return
      const schema = node as Record<string, any>
      if (schema.type === 'string' && ['integer', 'numeric', 'boolean'].includes(schema.format)) coerced.push(at)
      for (const [key, value] of Object.entries(schema)) visit(value, `${at}/${key}`)
    }
    visit(doc, '#')
    expect(coerced).toEqual([])
    const login = operation('post', '/auth/login').responses['200'].content['application/json'].schema
    expect(login.properties.expiresIn).toMatchObject({ type: 'integer' })
    const limit = operation('get', '/api/audit-logs').parameters.find((p: { name: string }) => p.name === 'limit')
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 200 })
  })

  test('every route that reads a body declares 400, 413 and 415, a validated body, params or query 422, and all 414 and 431', () => {
    for (const route of documentedRoutes) {
      const { body, params, query } = hooksOf(route)
      const declared = statuses(operation(route.method.toLowerCase(), openApiPath(route.path)))
      expect({ route: route.path, declared }).toEqual({ route: route.path, declared: expect.arrayContaining(['414', '431']) })
      if (route.method !== 'GET')
        expect({ route: route.path, declared }).toEqual({ route: route.path, declared: expect.arrayContaining(['400', '413', '415']) })
      if (body) expect({ route: route.path, declared }).toEqual({ route: route.path, declared: expect.arrayContaining(['422']) })
      if (params || query) expect({ route: route.path, declared }).toEqual({ route: route.path, declared: expect.arrayContaining(['422']) })
    }
  })

  test('the guards document themselves: a scope gives 401 and 403, a plan 403, a rate limit 429', () => {
    let guarded = 0
    for (const route of documentedRoutes) {
      const detail = hooksOf(route).detail ?? {}
      const op = operation(route.method.toLowerCase(), openApiPath(route.path))
      const label = `${route.method} ${route.path}`
      if (detail['x-required-scope']) {
        guarded++
        expect(op.responses['401'], label).toEqual({ $ref: '#/components/responses/Unauthenticated' })
        if (detail['x-required-scope'] !== 'any') expect(resolved(doc, op.responses['403']).description, label).toContain('insufficient_scope')
      }
      if (detail['x-required-plan']) expect(resolved(doc, op.responses['403']).description, label).toContain('plan_required')
      if (detail['x-rate-limit']) expect(op.responses['429'], label).toBeDefined()
    }
    expect(guarded).toBeGreaterThan(15)
    expect(resolved(doc, operation('get', '/api/usage').responses['403']).description).toContain('`usage:read` scope')
  })

  test('errors are application/problem+json with the one Problem schema', () => {
    expect(doc.components.schemas.Problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'code', 'detail', 'requestId']))
    expect(doc.components.schemas.Problem.properties.status).toEqual({ type: 'integer' })
    const problemSchema = JSON.stringify(doc.components.schemas.Problem)
    let problems = 0
    for (const { method, path, operation: op } of operations)
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        if (Number(status) < 400) continue
        const at = `${method} ${path} ${status}`
        const content: Record<string, { schema: unknown }> = resolved(doc, response).content ?? {}
        expect(Object.keys(content).length, at).toBeGreaterThan(0)
        // Other error bodies (readiness checks, MCP's JSON-RPC errors) have their own schemas; a problem never hides among them.
        for (const [type, media] of Object.entries(content))
          if (type === 'application/problem+json') {
            problems++
            expect(media.schema, at).toEqual({ $ref: '#/components/schemas/Problem' })
          } else expect(JSON.stringify(media.schema), at).not.toBe(problemSchema)
      }
    expect(problems).toBeGreaterThan(200)
  })

  test('the streams declare text/event-stream, and resume its 204 with no body', () => {
    for (const [method, path] of [
      ['post', '/api/chat'],
      ['get', '/api/chat/{id}/stream'],
      ['post', '/api/enhanced-chat'],
      ['post', '/api/docs/assistant'],
      ['post', '/api/codehost/import'],
      ['get', '/api/codehost/imports/{id}'],
    ] as const)
      expect(Object.keys(operation(method, path).responses['200'].content), `${method} ${path}`).toContain('text/event-stream')
    const resume = operation('get', '/api/chat/{id}/stream').responses
    expect(resume['204'].content).toBeUndefined()
    expect(operation('post', '/api/codehost/import').responses['202'].content['application/json'].schema.properties.statusUrl).toBeDefined()
  })

  test('GET /ws/agent is described: the upgrade, its handshake headers and its refusals', () => {
    const upgrade = operation('get', '/ws/agent')
    expect(statuses(upgrade)).toEqual(expect.arrayContaining(['101', '400', '401', '403', '426', '429']))
    expect(upgrade.security).toEqual([{ bearer: ['agents:run'] }])
    expect(upgrade.parameters.map((p: { name: string }) => p.name)).toEqual(['Upgrade', 'Sec-WebSocket-Key', 'Sec-WebSocket-Version', 'Sec-WebSocket-Protocol'])
    expect(upgrade.description).toContain('/asyncapi.json')
    expect(Object.keys(doc.paths['/ws/agent'])).toEqual(['get'])
  })

  test('a route without a token says so, and a guarded one names its scope', () => {
    expect(operation('get', '/health').security).toEqual([])
    expect(operation('post', '/auth/login').security).toEqual([])
    expect(operation('post', '/api/chat').security).toEqual([{ bearer: ['chat:write'] }])
    for (const { method, path, operation: op } of operations) expect(Array.isArray(op.security), `${method} ${path}`).toBe(true)
  })

  test('the explorer page loads the pinned script and the document', async () => {
    const res = await t.request('/swagger')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/html')
    const html = await res.text()
    expect(html).toContain('src="/swagger/explorer.js"')
    // Scalar's configuration sits in an attribute of an empty script element: nothing inline runs.
    const attribute = html.match(/<script id="api-reference" data-configuration="([^"]*)"><\/script>/)
    const configuration = JSON.parse(attribute![1]!.replaceAll('&#34;', '"'))
    expect(configuration).toMatchObject({
      url: 'swagger/json',
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: 'never',
      telemetry: false,
    })
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>[^<]+<\/script>/)
  })
})
