import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BASE } from '../helpers.ts'
import { callers, concretePath, guardedRoutes, type Callers, type GuardedRoute } from './callers.ts'

// What a probing client sends to learn a route's schema: each would be a 400, 415 or 422 to an authorised caller.
const probes: { name: string; headers: Record<string, string>; body?: string }[] = [
  { name: 'an empty JSON object', headers: { 'content-type': 'application/json' }, body: '{}' },
  { name: 'malformed JSON', headers: { 'content-type': 'application/json' }, body: '{"messages": [' },
  { name: 'a text/plain body', headers: { 'content-type': 'text/plain' }, body: 'hello' },
  { name: 'JSON nested 5,000 levels', headers: { 'content-type': 'application/json' }, body: `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}` },
  { name: 'a body over the size limit', headers: { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) }, body: '{}' },
]

let c: Callers
let routes: GuardedRoute[]

beforeAll(async () => {
  c = await callers()
  routes = guardedRoutes(c.t)
})
afterAll(() => c.close())

function probe(route: GuardedRoute, headers: Record<string, string>, sent: (typeof probes)[number]) {
  const withBody = route.method !== 'GET' && route.method !== 'HEAD'
  // Path and query values no schema accepts, so a route that validated first would answer 422.
  const url = `${BASE}${concretePath(route.path, '../%00not-an-id')}?bucket=week&limit=-5&fresh=maybe`
  return c.t.app.handle(new Request(url, { method: route.method, headers: { ...sent.headers, ...headers }, body: withBody ? sent.body : undefined }))
}

async function expectProblem(res: Response, status: number, code: string) {
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  const body = await res.json()
  expect({ status: res.status, code: body.code }).toEqual({ status, code })
  return body
}

describe('every route that declares a scope refuses before it reads the request', () => {
  test('the route table has the guarded routes of every domain', () => {
    const paths = routes.map((r) => r.path)
    for (const expected of ['/api/chat', '/api/usage', '/api/search', '/api/payment/create-checkout', '/api/codehost/import', '/auth/me'])
      expect(paths).toContain(expected)
    expect(routes.length).toBeGreaterThan(20)
  })

  test('anonymous callers and bad tokens get 401 with WWW-Authenticate, whatever the body, query and path', async () => {
    const failures: string[] = []
    for (const route of routes)
      for (const [kind, headers] of Object.entries(c.anonymous))
        for (const sent of probes) {
          const res = await probe(route, headers, sent)
          const body = await res.json().catch(() => undefined)
          const challenge = res.headers.get('www-authenticate') ?? ''
          if (res.status !== 401 || res.headers.get('content-type') !== 'application/problem+json' || !challenge.startsWith('Bearer') || body?.errors?.length)
            failures.push(`${route.method} ${route.path} (${kind}, ${sent.name}): ${res.status} ${body?.code} ${challenge}`)
        }
    expect(failures).toEqual([])
  })

  test('a valid token without the route scope gets 403 insufficient_scope, never a word about its input', async () => {
    const failures: string[] = []
    for (const route of routes) {
      if (route.scope === 'any') continue
      const role = c.roleWithout(route.scope)
      for (const sent of probes) {
        const res = await probe(route, { authorization: `Bearer ${c.tokens[role]}` }, sent)
        const body = await res.json().catch(() => undefined)
        if (res.status !== 403 || body?.code !== 'insufficient_scope' || body?.requiredScope !== route.scope)
          failures.push(`${route.method} ${route.path} as ${role} (${sent.name}): ${res.status} ${body?.code}`)
      }
    }
    expect(failures).toEqual([])
  })

  test('a token with the scope on a plan without the feature gets 403 plan_required before its query is validated', async () => {
    const planRoutes = routes.filter((r) => r.plan)
    expect(planRoutes.length).toBeGreaterThan(0)
    for (const route of planRoutes) {
      const res = await probe(route, { authorization: `Bearer ${c.tokens.owner}` }, probes[0]!)
      await expectProblem(res, 403, 'plan_required')
    }
  })

  test('an authorised caller is the only one told what is wrong with its input', async () => {
    const headers = { authorization: `Bearer ${c.tokens.owner}`, 'content-type': 'application/json' }
    const chat = await c.t.app.handle(new Request(`${BASE}/api/chat`, { method: 'POST', headers, body: '{}' }))
    const problem = await expectProblem(chat, 422, 'validation_failed')
    expect(problem.errors.map((e: { field: string }) => e.field)).toContain('messages')
    const usage = await c.t.app.handle(new Request(`${BASE}/api/usage?bucket=week`, { headers: { authorization: `Bearer ${c.tokens.enterpriseOwner}` } }))
    expect((await expectProblem(usage, 422, 'validation_failed')).detail).toContain('bucket')
    const malformed = await c.t.app.handle(new Request(`${BASE}/api/chat`, { method: 'POST', headers, body: '{"messages": [' }))
    await expectProblem(malformed, 400, 'invalid_json')
    const text = await c.t.app.handle(new Request(`${BASE}/api/chat`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'hi' }))
    await expectProblem(text, 415, 'unsupported_media_type')
    const deep = await c.t.app.handle(new Request(`${BASE}/api/chat`, { method: 'POST', headers, body: '['.repeat(100) + ']'.repeat(100) }))
    expect((await expectProblem(deep, 400, 'nesting_too_deep')).maxDepth).toBe(64)
    const large = await c.t.app.handle(
      new Request(`${BASE}/api/chat`, { method: 'POST', headers: { ...headers, 'content-length': String(64 * 1024 * 1024) }, body: '{}' }),
    )
    await expectProblem(large, 413, 'payload_too_large')
  })
})
