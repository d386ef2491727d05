import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryUsage } from '../../src/usage/meter.ts'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { bearer, makeApp, userWithRole } from '../helpers.ts'
import { corpus } from './fixtures.ts'

// A small search budget, so the limit is reached quickly; other tests search far less per user.
const t = await makeApp({ RATE_LIMIT_SEARCH_PER_MINUTE: '20' })
const member = await userWithRole(t, 'member')
afterAll(() => t.close())

beforeAll(async () => {
  await t.deps.codeIndex.indexFiles({ orgId: member.user.orgId, repositoryId: 'repo-shop', repositoryName: 'acme/shop', files: corpus })
})

const search = (body: unknown, token = member.token) => t.send('POST', '/api/search', body, bearer(token))

describe('POST /api/search', () => {
  test("answers ranked results of the caller's organisation with Cache-Control private, max-age=300", async () => {
    const res = await search({ query: 'evict least recently used entry', limit: 3 })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('private, max-age=300')
    const body = await res.json()
    expect(body).toMatchObject({ query: 'evict least recently used entry', mode: 'hybrid' })
    expect(body.results).toHaveLength(3)
    expect(body.results[0]).toEqual({
      repositoryId: 'repo-shop',
      repositoryName: 'acme/shop',
      path: 'internal/cache/lru.go',
      language: 'Go',
      startLine: expect.any(Number),
      endLine: expect.any(Number),
      snippet: expect.stringContaining('<mark>'),
      score: expect.any(Number),
    })
  })

  test('mode and filters reach the index', async () => {
    const res = await search({ query: 'signature', mode: 'text', languages: ['java'], pathPrefix: 'payments/', repositoryIds: ['repo-shop'], limit: 5 })
    const body = await res.json()
    expect(body.mode).toBe('text')
    expect(body.results.map((r: { path: string }) => r.path)).toEqual([expect.stringMatching(/^payments\/.*StripeWebhookHandler\.java$/)])
  })

  test('each search is metered as one search event for the caller', async () => {
    const user = await userWithRole(t, 'viewer')
    await search({ query: 'tokenizer' }, user.token)
    await search({ query: 'tokenizer' }, user.token)
    await t.deps.meter.flush()
    const usage = await queryUsage(t.deps.db, { orgId: user.user.orgId, userId: user.user.id, kind: 'search', from: 0, to: Date.now() + 1000, bucket: 'day' })
    expect(usage.totals).toEqual([{ kind: 'search', model: null, quantity: 2 }])
  })

  test('a user of another organisation finds nothing of this one', async () => {
    const org = await t.deps.accounts.createOrganization('Other Co', 'free')
    const outsider = await userWithRole(t, 'owner', { orgId: org.id })
    const res = await search({ query: 'evict least recently used entry', repositoryIds: ['repo-shop'] }, outsider.token)
    expect(res.status).toBe(200)
    expect((await res.json()).results).toEqual([])
  })
})

describe('access', () => {
  test('no token is 401 with a Bearer challenge', async () => {
    const res = await t.send('POST', '/api/search', { query: 'x' })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  test('a billing user, whose token has no search:read, is 403 insufficient_scope', async () => {
    const billing = await userWithRole(t, 'billing')
    const res = await search({ query: 'x' }, billing.token)
    expect(res.status).toBe(403)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'search:read' })
  })

  test('a viewer, who has search:read, may search', async () => {
    const viewer = await userWithRole(t, 'viewer')
    expect((await search({ query: 'x' }, viewer.token)).status).toBe(200)
  })

  test('the search budget is per user per minute, and enterprise organisations have none', async () => {
    const user = await userWithRole(t, 'member')
    const responses = await Promise.all(Array.from({ length: 22 }, () => search({ query: 'budget' }, user.token)))
    expect(responses.filter((r) => r.status === 200)).toHaveLength(20)
    const refused = responses.filter((r) => r.status === 429)
    expect(refused).toHaveLength(2)
    expect(await refused[0]!.json()).toMatchObject({ code: 'rate_limited', policy: 'search' })

    const org = await t.deps.accounts.createOrganization('Enterprise Co', 'enterprise')
    const big = await userWithRole(t, 'member', { orgId: org.id })
    const unlimited = await Promise.all(Array.from({ length: 30 }, () => search({ query: 'budget' }, big.token)))
    expect(unlimited.map((r) => r.status)).toEqual(Array(30).fill(200))
  })
})

describe('validation', () => {
  test.each([
    ['no query', {}, 'query'],
    ['an empty query', { query: '' }, 'query'],
    ['a blank query', { query: '   ' }, 'query'],
    ['a query over 500 characters', { query: 'x'.repeat(501) }, 'query'],
    ['an unknown field', { query: 'x', repository: 'shop' }, 'repository'],
    ['an unknown mode', { query: 'x', mode: 'fuzzy' }, 'mode'],
    ['limit 0', { query: 'x', limit: 0 }, 'limit'],
    ['limit 51', { query: 'x', limit: 51 }, 'limit'],
    ['a fractional limit', { query: 'x', limit: 2.5 }, 'limit'],
    ['an empty repositoryIds list', { query: 'x', repositoryIds: [] }, 'repositoryIds'],
    ['languages as a string', { query: 'x', languages: 'Go' }, 'languages'],
    ['an empty pathPrefix', { query: 'x', pathPrefix: '' }, 'pathPrefix'],
  ])('%s is 422 naming the field', async (_, body, field) => {
    const res = await search(body)
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    const problem = await res.json()
    expect(problem.code).toBe('validation_failed')
    expect(problem.errors.map((e: { field: string }) => e.field)).toContain(field)
  })

  test('the OpenAPI document describes the route, its scope, its rate limit and every answer', async () => {
    const doc = await (await t.request(OPENAPI_JSON_PATH)).json()
    const operation = doc.paths['/api/search'].post
    expect(operation['x-required-scope']).toBe('search:read')
    expect(operation['x-rate-limit'].map((p: { name: string }) => p.name)).toContain('search')
    expect(operation.summary).toContain('Search the code')
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '403', '413', '414', '415', '422', '429', '431', '502', '503', '504'])
    expect(Object.keys(operation.requestBody.content['application/json'].schema.properties).sort()).toEqual([
      'expand',
      'languages',
      'limit',
      'mode',
      'pathPrefix',
      'query',
      'repositoryIds',
    ])
  })
})
